//! Semaphores in Curator's `InterProcessSemaphoreV2` layout, so a Java service
//! and wardlock share one semaphore:
//!
//! - `<root>/<name>/locks`: an internal mutex in `InterProcessMutex`'s layout
//!   (`_c_<uuid>-lock-<seq>`), whatever the backend's dialect;
//! - `<root>/<name>/leases`: one `_c_<uuid>-lease-<seq>` node per permit,
//!   EPHEMERAL_SEQUENTIAL, protected (found by its uuid after a connection
//!   loss during the create).
//!
//! An acquire takes the internal mutex, creates its lease node, then lists
//! `leases` with a child watch until there are at most `permits` children
//! (all of them count, as in Curator), and releases the mutex. Only the mutex
//! holder watches the leases (no herd); the others wait in the mutex's queue,
//! each watching one node, in arrival order (fair).
//!
//! Fencing token: the `czxid` of the lease node. Lease nodes are created one
//! at a time, under the mutex, and the creator holds the mutex until its lease
//! is granted, so a permit's token is greater than every permit granted
//! before it (by clients that respect the mutex: wardlock and Curator).
//!
//! Parents are created as the lock recipe creates them (CONTAINER, as Curator's
//! `creatingParentContainersIfNeeded`; PERSISTENT in the kazoo dialect).

use std::sync::Arc;

use tokio::time::Instant;
use uuid::Uuid;

use super::connection::ZkSession;
use super::recipe::{self, OwnedNode, Request, Waiting, token_of, until};
use super::{Dialect, Shared};
use crate::connection::retry;
use crate::recipe::create::create_and_list;
use crate::recipe::pending::PendingNode;
use crate::recipe::release;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Mode};

/// How many times a lease create is repeated under one hold of the mutex
/// (a vanished CONTAINER parent, a lost answer) before starting over.
const CREATE_ATTEMPTS: u32 = 3;

/// What waiting for a lease came to.
enum Taken {
    Held(OwnedNode),
    /// Too many leases, and not waiting (try-acquire).
    Busy,
    /// Start over (take the mutex again; on a new session if the old ended).
    Retry,
}

/// Releases the internal mutex when dropped (granted, failed or cancelled).
struct MutexHold<'a> {
    shared: &'a Arc<Shared>,
    node: Option<OwnedNode>,
}

impl Drop for MutexHold<'_> {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            release::delete_node(self.shared, node.generation, node.prefix, node.path);
        }
    }
}

/// Takes one of `permits` permits of semaphore `name`, writing `data` into the
/// lease node. `None`: busy and `waiting` is [`Waiting::DontWait`] (the
/// internal mutex was taken, or there were too many leases).
///
/// # Errors
/// As [`recipe::acquire`].
///
/// # Cancellation safety
/// Cancel safe: on every way out but a grant, the lease node is deleted first
/// and the internal mutex released after it (the deletes are sent in that
/// order on one session).
pub(super) async fn acquire(
    shared: &Arc<Shared>,
    name: &LockName,
    permits: u32,
    data: &[u8],
    deadline: Option<Instant>,
    waiting: Waiting,
) -> Result<Option<OwnedNode>, BackendError> {
    let base = shared.connection.config().lock_path(name);
    let mutex = Request {
        shared,
        parent: format!("{base}/locks"),
        dialect: Dialect::CuratorMutex,
        mode: Mode::Exclusive,
        data,
        waiting,
    };
    let leases = format!("{base}/leases");
    loop {
        let Some(node) = recipe::acquire_at(&mutex, deadline).await? else {
            return Ok(None);
        };
        let generation = node.generation;
        let _mutex = MutexHold {
            shared,
            node: Some(node),
        };
        let Some(session) = shared.connection.session_of(generation) else {
            continue;
        };
        let prefix = format!("_c_{}-lease-", Uuid::new_v4().as_hyphenated());
        // Declared after the mutex: dropped (its delete sent) before it.
        let mut pending = PendingNode::new(shared, generation, &leases, &prefix);
        let lease = Lease {
            shared,
            session: &session,
            leases: &leases,
            prefix: &prefix,
            data,
        };
        match until(deadline, lease.take(permits, waiting, &mut pending)).await?? {
            Taken::Held(node) => {
                pending.disarm();
                return Ok(Some(node));
            }
            Taken::Busy => return Ok(None),
            Taken::Retry => continue,
        }
    }
}

/// One lease node to create, on one session, under the internal mutex.
struct Lease<'a> {
    shared: &'a Arc<Shared>,
    session: &'a Arc<ZkSession>,
    leases: &'a str,
    prefix: &'a str,
    data: &'a [u8],
}

impl Lease<'_> {
    /// Creates the lease node and waits until at most `permits` leases exist.
    async fn take(
        &self,
        permits: u32,
        waiting: Waiting,
        pending: &mut PendingNode,
    ) -> Result<Taken, BackendError> {
        let Lease {
            shared,
            session,
            leases,
            prefix,
            data,
        } = *self;
        let mut created = None;
        for _ in 0..CREATE_ATTEMPTS {
            if session.liveness.is_ended() {
                break;
            }
            created = create_and_list(shared, session, leases, prefix, data).await?;
            if created.is_some() {
                break;
            }
        }
        let Some(created) = created else {
            return Ok(Taken::Retry);
        };
        let node = created.node;
        let path = format!("{leases}/{node}");
        pending.created(&path);
        let permits = usize::try_from(permits).unwrap_or(usize::MAX);
        let mut children: Vec<String> = created.listing.children;
        loop {
            if !children.contains(&node) {
                // Our lease vanished (the session ended, or someone deleted it).
                return Ok(Taken::Retry);
            }
            if children.len() <= permits {
                return Ok(Taken::Held(OwnedNode {
                    path,
                    prefix: prefix.to_owned(),
                    generation: session.generation,
                    token: token_of(created.czxid),
                }));
            }
            if waiting == Waiting::DontWait {
                return Ok(Taken::Busy);
            }
            // Only the mutex holder gets here: one watcher of the leases.
            match session.client.get_and_watch_children(leases).await {
                Ok((now, _, watcher)) => {
                    if now.contains(&node) && now.len() > permits {
                        if !recipe::watch_fired(session, watcher).await {
                            return Ok(Taken::Retry);
                        }
                        // A wake-up is not proof: list (and watch) again.
                        continue;
                    }
                    children = now;
                }
                Err(error) => {
                    if !retry::after(session, error).await? {
                        return Ok(Taken::Retry);
                    }
                }
            }
        }
    }
}
