//! Guaranteed delete: a lock node that must go is deleted, retried in the
//! background until it is gone or its session ended (which removes it anyway).
//! A leaked node would block its lock forever (kazoo #732), so nothing here gives
//! up while the session lives — except on a refusal retrying cannot cure (say,
//! `NoAuth` after someone changed the ACLs), which is logged as an error.

use std::sync::Arc;

use zookeeper_client::Error as ZkError;

use super::super::Shared;
use super::super::connection::ZkSession;
use crate::connection::retry;

/// Deletes `path`, created in session `generation`. The delete request is sent
/// before this returns, so it is ordered before anything the caller sends next on
/// the same session; confirmation and retries happen in the background.
pub(crate) fn delete_node(shared: &Arc<Shared>, generation: u64, prefix: String, path: String) {
    let Some(session) = shared.connection.session_of(generation) else {
        shared.untrack(generation, &prefix);
        return;
    };
    let first = session.client.delete(&path, None);
    let shared_for_task = shared.clone();
    shared.spawn(async move {
        let shared = shared_for_task;
        match first.await {
            Ok(()) | Err(ZkError::NoNode) => {}
            Err(error) => {
                if retry_after(&session, &path, error).await {
                    drop(session);
                    delete_until_gone(&shared, generation, &path).await;
                }
            }
        }
        shared.untrack(generation, &prefix);
    });
}

/// Deletes whatever node of `parent` carries `prefix` (a create whose answer never
/// arrived, e.g. because the waiting guest was cancelled).
pub(crate) fn delete_by_prefix(
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
            // After a reconnect the server may lag behind our create: sync first.
            let listed = match session.sync(&parent).await {
                Ok(()) => session.client.list_children(&parent).await,
                Err(error) => Err(error),
            };
            match listed {
                Ok(children) => {
                    drop(session);
                    for child in children.iter().filter(|c| c.starts_with(&prefix)) {
                        delete_until_gone(&shared, generation, &format!("{parent}/{child}")).await;
                    }
                    break;
                }
                Err(ZkError::NoNode) => break,
                Err(error) => {
                    if !retry_after(&session, &parent, error).await {
                        break;
                    }
                }
            }
        }
        shared.untrack(generation, &prefix);
    });
}

/// Retries deleting `path` until it is gone, its session ended, or ZooKeeper
/// refuses for good.
async fn delete_until_gone(shared: &Arc<Shared>, generation: u64, path: &str) {
    loop {
        let Some(session) = shared.connection.session_of(generation) else {
            return;
        };
        match session.client.delete(path, None).await {
            Ok(()) | Err(ZkError::NoNode) => return,
            Err(error) => {
                if !retry_after(&session, path, error).await {
                    return;
                }
            }
        }
    }
}

/// After a failed request on `path`: true when it should be repeated on `session`
/// (waiting for the reconnect first); false when the session is gone (its
/// ephemeral nodes with it) or retrying cannot help (logged).
async fn retry_after(session: &ZkSession, path: &str, error: ZkError) -> bool {
    match retry::after(session, error).await {
        Ok(again) => again,
        Err(refused) => {
            tracing::error!(%path, %refused, "cannot delete a lock node; it stays until its session ends");
            false
        }
    }
}
