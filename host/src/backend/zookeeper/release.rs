//! Guaranteed delete: a lock node that must go is deleted, retried in the
//! background until it is gone or its session ended (which removes it anyway).
//! A leaked node would block its lock forever (kazoo #732), so nothing here gives up
//! while the session lives.

use std::sync::Arc;
use std::time::Duration;

use zookeeper_client::Error as ZkError;

use super::Shared;

/// Deletes `path`, created in session `generation`. The delete request is sent
/// before this returns, so it is ordered before anything the caller sends next on
/// the same session; confirmation and retries happen in the background.
pub(super) fn delete_node(shared: &Arc<Shared>, generation: u64, prefix: String, path: String) {
    let Some(session) = shared.connection.session_of(generation) else {
        shared.untrack(generation, &prefix);
        return;
    };
    let first = session.client.delete(&path, None);
    let shared_for_task = shared.clone();
    shared.spawn(async move {
        let shared = shared_for_task;
        if !needs_retry(&path, first.await) {
            shared.untrack(generation, &prefix);
            return;
        }
        delete_until_gone(&shared, generation, &path).await;
        shared.untrack(generation, &prefix);
    });
}

/// Deletes whatever node of `parent` carries `prefix` (a create whose answer never
/// arrived, e.g. because the waiting guest was cancelled).
pub(super) fn delete_by_prefix(
    shared: &Arc<Shared>,
    generation: u64,
    parent: String,
    prefix: String,
) {
    let shared_for_task = shared.clone();
    shared.spawn(async move {
        let shared = shared_for_task;
        loop {
            let Some(session) = shared.connection.session_of(generation) else {
                break;
            };
            match session.client.list_children(&parent).await {
                Ok(children) => {
                    for child in children.iter().filter(|c| c.starts_with(&prefix)) {
                        delete_until_gone(&shared, generation, &format!("{parent}/{child}")).await;
                    }
                    break;
                }
                Err(ZkError::NoNode) => break,
                Err(error) => {
                    if !wait_before_retry(&session, &error).await {
                        break;
                    }
                }
            }
        }
        shared.untrack(generation, &prefix);
    });
}

/// Retries deleting `path` until it is gone or its session ended.
async fn delete_until_gone(shared: &Arc<Shared>, generation: u64, path: &str) {
    loop {
        let Some(session) = shared.connection.session_of(generation) else {
            return;
        };
        match session.client.delete(path, None).await {
            Ok(()) | Err(ZkError::NoNode) => return,
            Err(error) => {
                if !wait_before_retry(&session, &error).await {
                    return;
                }
            }
        }
    }
}

/// True when a delete's result means it must be retried.
fn needs_retry(path: &str, result: Result<(), ZkError>) -> bool {
    match result {
        Ok(())
        | Err(ZkError::NoNode)
        | Err(ZkError::SessionExpired)
        | Err(ZkError::ClientClosed) => false,
        Err(error) => {
            tracing::warn!(%path, %error, "lock node delete failed; retrying in the background");
            true
        }
    }
}

/// After a failed request: waits until retrying makes sense. False when the
/// session is gone for good (its ephemeral nodes with it).
async fn wait_before_retry(session: &super::connection::ZkSession, error: &ZkError) -> bool {
    match error {
        ZkError::SessionExpired | ZkError::ClientClosed | ZkError::AuthFailed => false,
        ZkError::ConnectionLoss => session.connected().await.is_ok(),
        _ => {
            // Not a connection problem (e.g. throttling): back off a little.
            tokio::time::sleep(Duration::from_millis(200)).await;
            !session.is_terminated()
        }
    }
}
