//! The requests of one attempt at a lock: create our node and list the queue in
//! one round trip, find our node after a create whose answer was lost, create the
//! lock's parent, list again after a wake-up.

use std::sync::Arc;

use zookeeper_client::{CreateMode, Error as ZkError, Stat};

use super::super::Shared;
use super::super::connection::ZkSession;
use crate::connection::retry;
use wardlock_backend::BackendError;

/// A lock's children as one listing saw them, with the listing's `pzxid`: the zxid
/// of the last change among the children (a create or delete) it reflects.
pub(crate) struct Listing {
    pub children: Vec<String>,
    pub pzxid: i64,
}

/// Our node, created.
pub(crate) struct Created {
    pub node: String,
    pub czxid: i64,
    pub listing: Listing,
}

/// Creates `prefix`+sequence under `parent` and lists `parent` in one round trip:
/// the server answers one session's requests in order, so the listing already
/// holds the new node. `None`: start the attempt over.
///
/// # Errors
/// [`BackendError::Unavailable`] when ZooKeeper refuses (e.g. ACLs).
pub(crate) async fn create_and_list(
    shared: &Arc<Shared>,
    session: &Arc<ZkSession>,
    parent: &str,
    prefix: &str,
    data: &[u8],
) -> Result<Option<Created>, BackendError> {
    let options = CreateMode::EphemeralSequential.with_acls(shared.acls());
    let node_path = format!("{parent}/{prefix}");
    let create = session.client.create(&node_path, data, &options);
    let listing = session.client.get_children(parent);
    let (created, listed) = tokio::join!(create, listing);
    match created {
        Ok((stat, sequence)) => {
            let node = format!("{prefix}{sequence}");
            let listing = match listed {
                Ok((children, parent_stat)) if children.contains(&node) => Listing {
                    children,
                    pzxid: parent_stat.pzxid,
                },
                _ => match list(session, parent).await? {
                    Some(listing) => listing,
                    None => return Ok(None),
                },
            };
            Ok(Some(Created {
                node,
                czxid: stat.czxid,
                listing,
            }))
        }
        Err(ZkError::NoNode) => {
            ensure_parent(shared, session, parent).await?;
            Ok(None)
        }
        Err(ZkError::ConnectionLoss) => find_by_prefix(session, parent, prefix).await,
        Err(error) => {
            retry::after(session, error).await?;
            Ok(None)
        }
    }
}

/// After a create whose answer was lost: the create may have been applied, so find
/// our node by its uuid prefix — after a `sync`, since the server we reconnected
/// to may not have applied it yet.
async fn find_by_prefix(
    session: &ZkSession,
    parent: &str,
    prefix: &str,
) -> Result<Option<Created>, BackendError> {
    loop {
        if session.connected().await.is_err() {
            return Ok(None);
        }
        match session.sync(parent).await {
            Ok(()) => break,
            Err(error) => {
                if !retry::after(session, error).await? {
                    return Ok(None);
                }
            }
        }
    }
    let Some(listing) = list(session, parent).await? else {
        return Ok(None);
    };
    let Some(node) = listing
        .children
        .iter()
        .find(|c| c.starts_with(prefix))
        .cloned()
    else {
        return Ok(None);
    };
    match stat_of(session, &format!("{parent}/{node}")).await? {
        Some(stat) => Ok(Some(Created {
            node,
            czxid: stat.czxid,
            listing,
        })),
        None => Ok(None),
    }
}

/// The node's stat, riding out connection losses; `None` when it is gone or the
/// session ended.
async fn stat_of(session: &ZkSession, path: &str) -> Result<Option<Stat>, BackendError> {
    loop {
        match session.client.check_stat(path).await {
            Ok(stat) => return Ok(stat),
            Err(error) => {
                if !retry::after(session, error).await? {
                    return Ok(None);
                }
            }
        }
    }
}

/// Creates the lock's parent (and missing ancestors) as CONTAINER nodes, which
/// the server removes once empty, so lock directories do not pile up (kazoo #329);
/// PERSISTENT in the kazoo dialect (see [`super::dialect::Dialect::parent_mode`]).
/// The guarded store makes its directories the same way.
pub(crate) async fn ensure_parent(
    shared: &Arc<Shared>,
    session: &ZkSession,
    parent: &str,
) -> Result<(), BackendError> {
    let mode = shared.connection.config().dialect.parent_mode();
    let options = mode.with_acls(shared.acls());
    match session.client.mkdir(parent, &options).await {
        Ok(()) => Ok(()),
        Err(error) => {
            retry::after(session, error).await?;
            Ok(())
        }
    }
}

/// Lists `parent`'s children, riding out connection losses. `None`: the session
/// ended (or the parent vanished), so the caller starts over.
///
/// # Errors
/// [`BackendError::Unavailable`] when ZooKeeper refuses.
pub(crate) async fn list(
    session: &ZkSession,
    parent: &str,
) -> Result<Option<Listing>, BackendError> {
    loop {
        match session.client.get_children(parent).await {
            Ok((children, stat)) => {
                return Ok(Some(Listing {
                    children,
                    pzxid: stat.pzxid,
                }));
            }
            Err(ZkError::NoNode) => return Ok(None),
            Err(error) => {
                if !retry::after(session, error).await? {
                    return Ok(None);
                }
            }
        }
    }
}
