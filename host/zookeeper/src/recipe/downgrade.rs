//! Downgrade on ZooKeeper: a shared node placed beside an exclusive node we hold,
//! so that releasing the exclusive node leaves a shared grant that lets readers in
//! and keeps every writer queued after it out (Curator ≥ 5.5 semantics).

use std::sync::Arc;

use uuid::Uuid;
use zookeeper_client::{CreateMode, Error as ZkError};

use super::super::Shared;
use super::super::recipe::{OwnedNode, token_of};
use crate::connection::retry;
use wardlock_backend::BackendError;

/// Creates the shared node that downgrades `exclusive`, granted at once: it sorts
/// beside `exclusive` (same sequence, see
/// [`super::dialect::Dialect::downgrade_node`]), ahead of every node queued later.
///
/// # Errors
/// [`BackendError::Lost`] when `exclusive`'s session ended; `Unsupported` in a
/// dialect without shared locks; `Unavailable` when ZooKeeper refuses.
///
/// # Cancellation safety
/// Cancel safe: a node created for a dropped call is tracked under its session,
/// so reconciliation deletes it (and its session's end would anyway).
pub(crate) async fn downgrade(
    shared: &Arc<Shared>,
    exclusive: &OwnedNode,
    data: &[u8],
) -> Result<OwnedNode, BackendError> {
    let dialect = shared.connection.config().dialect;
    let (parent, node) = exclusive
        .path
        .rsplit_once('/')
        .ok_or_else(|| BackendError::Unavailable(format!("bad node path {}", exclusive.path)))?;
    let name = dialect
        .downgrade_node(Uuid::new_v4(), node)
        .ok_or_else(|| {
            BackendError::Unsupported(format!("the {dialect} dialect cannot downgrade {node}"))
        })?;
    let path = format!("{parent}/{name}");
    let generation = exclusive.generation;
    shared.track(generation, &name);
    let options = CreateMode::Ephemeral.with_acls(shared.acls());
    let czxid = loop {
        let Some(session) = shared.connection.session_of(generation) else {
            shared.untrack(generation, &name);
            return Err(BackendError::Lost);
        };
        let failed = match session.client.create(&path, data, &options).await {
            Ok((stat, _)) => break stat.czxid,
            // Our earlier try was applied, its answer lost.
            Err(ZkError::NodeExists) => match session.client.check_stat(&path).await {
                Ok(Some(stat)) => break stat.czxid,
                Ok(None) => continue,
                Err(error) => error,
            },
            Err(error) => error,
        };
        match retry::after(&session, failed).await {
            Ok(true) => {}
            Ok(false) => {
                shared.untrack(generation, &name);
                return Err(BackendError::Lost);
            }
            Err(error) => {
                shared.untrack(generation, &name);
                return Err(error);
            }
        }
    };
    Ok(OwnedNode {
        path,
        prefix: name,
        generation,
        token: token_of(czxid).max(exclusive.token + 1),
    })
}
