//! Leader election on ZooKeeper ([`wardlock_backend::election`]) in Curator's
//! `LeaderLatch` layout (5.x), so Java services and wardlock guests campaign
//! in one election:
//!
//! - election NAME is the directory `<root>/NAME`, the one lock NAME uses;
//! - each candidate is an EPHEMERAL_SEQUENTIAL node
//!   `_c_<uuid>-latch-NNNNNNNNNN` (Curator's protected name: the uuid finds a
//!   node whose create answer was lost, as for lock nodes, see
//!   [`crate::recipe::create::create_and_list`]) holding the candidate's value
//!   (Curator: the participant id);
//! - the leader is the candidate with the lowest sequence, sorted on the text
//!   after the last `latch-` (Curator's sort); a waiting candidate watches
//!   only its predecessor (a data watch, no herd) and lists again on a wake.
//!
//! Only `latch-` nodes are candidates here; lock nodes (`__WRIT__`,
//! `__READ__`, `lock-`, kazoo's) in the same directory are ignored. The other
//! way round, no lock dialect takes a latch node for a contender (they match
//! whole node patterns, see [`crate::recipe::dialect`]), and Curator's own lock
//! recipes sort a node without their marker by its whole name: `_c_…` and
//! `latch-…` sort after every 10-digit sequence, so a latch node never stands
//! ahead of a Curator lock node, and Curator's `LeaderLatch` sorts wardlock's
//! `_c_…` lock nodes after every latch node in the same way. A lock and an
//! election of one name never meet.
//!
//! Term: the candidate node's `czxid` (the grant's token is
//! `local_token(czxid, 0)`, the rule of a lock node of its own). Leaders
//! follow one another in sequence order, which is creation order within the
//! directory, so in `czxid` order; a reaped and recreated directory restarts
//! the sequence but not the zxid. [`leader`] reports the same number from the
//! node's stat.
//!
//! There is no host-local hand-off for elections: every candidate has a node
//! of its own (a leadership is one guest's).

use std::sync::Arc;

use tokio::time::Instant;
use uuid::Uuid;
use zookeeper_client::{Error as ZkError, OneshotWatcher, Stat};

use super::Shared;
use super::connection::ZkSession;
use super::recipe::{OwnedNode, connect, token_of, until, wait_for_change};
use crate::connection::retry;
use crate::recipe::create::{create_and_list, list};
use crate::recipe::dialect::{is_hyphenated_uuid, split_sequence};
use crate::recipe::pending::PendingNode;
use wardlock_backend::election::differs;
use wardlock_backend::handoff::{SessionHealth, local_token};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Leader, LeaderChange};

/// Curator `LeaderLatch`'s node marker; the sequence follows it.
const MARKER: &str = "latch-";

/// The name prefix of a new candidate node; ZooKeeper appends the sequence.
fn node_prefix(uuid: Uuid) -> String {
    format!("_c_{}-{MARKER}", uuid.as_hyphenated())
}

/// A latch node, as Curator's `LeaderLatch` orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate<'a> {
    node: &'a str,
    /// What it sorts by: the sequence after `latch-`.
    key: &'a str,
}

/// `node` as a candidate: `latch-` and a sequence, with or without Curator's
/// protection prefix `_c_<uuid>-`; `None` for any other child.
fn candidate(node: &str) -> Option<Candidate<'_>> {
    let (head, key) = split_sequence(node, false)?;
    let protection = head.strip_suffix(MARKER)?;
    let ok = protection.is_empty()
        || protection
            .strip_prefix("_c_")
            .and_then(|p| p.strip_suffix('-'))
            .is_some_and(is_hyphenated_uuid);
    ok.then_some(Candidate { node, key })
}

/// The candidates among `children`, leader first.
fn candidates(children: &[String]) -> Vec<Candidate<'_>> {
    let mut found: Vec<Candidate<'_>> = children.iter().filter_map(|c| candidate(c)).collect();
    found.sort_by(|a, b| a.key.cmp(b.key).then(a.node.cmp(b.node)));
    found
}

/// The term of a candidate node created at `czxid`: the token of a lock node
/// of its own (grant 0 under it, see `handoff`).
fn term_of(czxid: i64) -> u64 {
    local_token(token_of(czxid), 0)
}

/// Campaigns as `candidate` until it leads: its
/// node, whose `token` is the `czxid` (the grant's token is
/// `local_token(token, 0)`, as for any node of its own).
///
/// # Errors
/// `Timeout` past `deadline`; `Unavailable` or `Refused` when ZooKeeper
/// refuses or no session can be connected (see [`connect`]).
///
/// # Cancellation safety
/// Cancel safe: the node of a dropped or failed campaign is deleted in the
/// background ([`PendingNode`], found by its uuid when the create's answer
/// never arrived). A session that ends while waiting is replaced and the
/// candidate queues again, keeping the deadline, as a lock's waiter does.
pub(super) async fn campaign(
    shared: &Arc<Shared>,
    candidate: wardlock_backend::Candidate<'_>,
    deadline: Option<Instant>,
) -> Result<OwnedNode, BackendError> {
    let wardlock_backend::Candidate { name, value } = candidate;
    let parent = shared.connection.config().lock_path(name);
    loop {
        let session = until(deadline, connect(shared, deadline)).await??;
        let prefix = node_prefix(Uuid::new_v4());
        let mut pending = PendingNode::new(shared, session.generation, &parent, &prefix);
        let attempt = attempt(shared, &session, &parent, &prefix, value, &mut pending);
        if let Some(node) = until(deadline, attempt).await?? {
            pending.disarm();
            return Ok(node);
        }
    }
}

/// One campaign on one session: `None` to start over (the node vanished or
/// the session ended).
async fn attempt(
    shared: &Arc<Shared>,
    session: &Arc<ZkSession>,
    parent: &str,
    prefix: &str,
    value: &str,
    pending: &mut PendingNode,
) -> Result<Option<OwnedNode>, BackendError> {
    let Some(created) = create_and_list(shared, session, parent, prefix, value.as_bytes()).await?
    else {
        return Ok(None);
    };
    let path = format!("{parent}/{}", created.node);
    pending.created(&path);
    let mut children = created.listing.children;
    loop {
        let predecessor = {
            let queue = candidates(&children);
            match queue.iter().position(|c| c.node == created.node) {
                None => return Ok(None),
                Some(0) => {
                    return Ok(Some(OwnedNode {
                        path,
                        prefix: prefix.to_owned(),
                        generation: session.generation,
                        token: token_of(created.czxid),
                    }));
                }
                Some(index) => queue[index - 1].node.to_owned(),
            }
        };
        if !wait_for_change(session, &format!("{parent}/{predecessor}")).await? {
            return Ok(None);
        }
        // A wake (the predecessor went, or proclaimed) is no proof: list again.
        children = match list(session, parent).await? {
            Some(listing) => listing.children,
            None => return Ok(None),
        };
    }
}

/// Sets the value of leadership `node` while it leads: its node exists and
/// is the lowest candidate.
///
/// # Errors
/// [`BackendError::Lost`] when the node is gone, no longer leads or its
/// session ended; `Unavailable`/`Refused` when ZooKeeper fails or does not
/// answer within the session timeout.
///
/// # Cancellation safety
/// A dropped call may still have set the value.
pub(super) async fn proclaim(
    shared: &Arc<Shared>,
    node: &OwnedNode,
    value: &str,
) -> Result<(), BackendError> {
    let session = shared
        .connection
        .session_of(node.generation)
        .ok_or(BackendError::Lost)?;
    if matches!(session.health(), SessionHealth::Ended) {
        return Err(BackendError::Lost);
    }
    let (parent, own) = node.path.rsplit_once('/').ok_or(BackendError::Lost)?;
    bounded(shared, "proclaim", async {
        loop {
            let Some(listing) = list(&session, parent).await? else {
                return Err(BackendError::Lost);
            };
            if candidates(&listing.children).first().map(|c| c.node) != Some(own) {
                return Err(BackendError::Lost);
            }
            match session
                .client
                .set_data(&node.path, value.as_bytes(), None)
                .await
            {
                Ok(_) => return Ok(()),
                Err(ZkError::NoNode) => return Err(BackendError::Lost),
                Err(error) => {
                    if !retry::after(&session, error).await? {
                        return Err(BackendError::Lost);
                    }
                }
            }
        }
    })
    .await
}

/// Who leads election `name` now.
///
/// # Errors
/// `Unavailable`/`Refused` when ZooKeeper fails or does not answer within
/// the session timeout.
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn leader(
    shared: &Arc<Shared>,
    name: &LockName,
) -> Result<Option<Leader>, BackendError> {
    let parent = shared.connection.config().lock_path(name);
    bounded(shared, "tell the leader", async {
        loop {
            let session = connect(shared, None).await?;
            if let Some(observed) = observe(&session, &parent, false).await? {
                return Ok(observed.leader);
            }
        }
    })
    .await
}

/// Resolves with election `name`'s leader once it differs from `seen`: a
/// children watch on the directory (candidates come and go) and a data watch
/// on the leader's node (it proclaims) wake it; a session that ends is
/// replaced.
///
/// # Errors
/// `Unavailable`/`Refused` when ZooKeeper refuses or no session can be
/// connected (see [`connect`]).
///
/// # Cancellation safety
/// Cancel safe: it only observes (a dropped call leaves at most the
/// server's one-shot watches, which fire once and go).
pub(super) fn leader_changed(
    shared: Arc<Shared>,
    name: &LockName,
    seen: Option<Leader>,
) -> LeaderChange {
    let parent = shared.connection.config().lock_path(name);
    Box::pin(async move {
        loop {
            let session = connect(&shared, None).await?;
            let Some(observed) = observe(&session, &parent, true).await? else {
                continue;
            };
            if differs(seen.as_ref(), observed.leader.as_ref()) {
                return Ok(observed.leader);
            }
            observed.until_changed(&session).await;
        }
    })
}

/// The leader as one look saw it, and the watches that fire when it may
/// have changed (when asked for).
struct Observed {
    leader: Option<Leader>,
    /// The directory's children (or, without a directory, its creation).
    directory: Option<OneshotWatcher>,
    /// The leader's node (its data, its deletion).
    node: Option<OneshotWatcher>,
}

impl Observed {
    /// Waits until a watch fires or the session is over.
    async fn until_changed(self, session: &ZkSession) {
        let fired = |watch: Option<OneshotWatcher>| async move {
            match watch {
                Some(watch) => {
                    watch.changed().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = fired(self.directory) => {}
            () = fired(self.node) => {}
            () = session.until_over() => {}
        }
    }
}

/// Looks at the directory `parent` and its lowest candidate, setting watches
/// when `watch`. `None`: the session ended, start over on a new one.
async fn observe(
    session: &ZkSession,
    parent: &str,
    watch: bool,
) -> Result<Option<Observed>, BackendError> {
    loop {
        let listed = if watch {
            session
                .client
                .get_and_watch_children(parent)
                .await
                .map(|(children, _, watcher)| (children, Some(watcher)))
        } else {
            session
                .client
                .list_children(parent)
                .await
                .map(|children| (children, None))
        };
        let (children, directory) = match listed {
            Ok(listed) => listed,
            Err(ZkError::NoNode) if !watch => return Ok(Some(nobody(None))),
            Err(ZkError::NoNode) => match session.client.check_and_watch_stat(parent).await {
                // Created since: look again.
                Ok((Some(_), _)) => continue,
                Ok((None, created)) => return Ok(Some(nobody(Some(created)))),
                Err(error) => {
                    if !retry::after(session, error).await? {
                        return Ok(None);
                    }
                    continue;
                }
            },
            Err(error) => {
                if !retry::after(session, error).await? {
                    return Ok(None);
                }
                continue;
            }
        };
        let Some(first) = candidates(&children).first().map(|c| c.node.to_owned()) else {
            return Ok(Some(nobody(directory)));
        };
        let path = format!("{parent}/{first}");
        let read = if watch {
            session
                .client
                .get_and_watch_data(&path)
                .await
                .map(|(data, stat, watcher)| (data, stat, Some(watcher)))
        } else {
            session
                .client
                .get_data(&path)
                .await
                .map(|(data, stat)| (data, stat, None))
        };
        match read {
            Ok((data, stat, node)) => {
                return Ok(Some(Observed {
                    leader: Some(leader_of(first, &data, &stat)),
                    directory,
                    node,
                }));
            }
            // Gone since the listing: list again.
            Err(ZkError::NoNode) => {}
            Err(error) => {
                if !retry::after(session, error).await? {
                    return Ok(None);
                }
            }
        }
    }
}

/// Nobody leads; `directory` fires when that may change.
fn nobody(directory: Option<OneshotWatcher>) -> Observed {
    Observed {
        leader: None,
        directory,
        node: None,
    }
}

/// The leader a candidate node stands for.
fn leader_of(node: String, data: &[u8], stat: &Stat) -> Leader {
    Leader {
        owner: node,
        value: String::from_utf8_lossy(data).into_owned(),
        term: term_of(stat.czxid),
    }
}

/// `call`, given up with `Unavailable` once the session timeout passed.
async fn bounded<T>(
    shared: &Arc<Shared>,
    what: &str,
    call: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    let deadline = Instant::now() + shared.connection.config().session_timeout;
    until(Some(deadline), call).await.unwrap_or_else(|_| {
        Err(BackendError::Unavailable(format!(
            "ZooKeeper did not {what} within the session timeout"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latch(uuid: &str, seq: u32) -> String {
        format!("_c_{uuid}-latch-{seq:010}")
    }

    const A: &str = "00000000-0000-0000-0000-00000000000a";
    const B: &str = "00000000-0000-0000-0000-00000000000b";

    #[test]
    fn candidates_sort_on_the_latch_sequence_and_ignore_lock_nodes() {
        let children = vec![
            latch(A, 7),
            format!("_c_{B}-__WRIT__0000000001"),
            format!("_c_{B}-__READ__0000000002"),
            format!("_c_{B}-lock-0000000003"),
            format!("{}__lock__0000000004", "f".repeat(32)),
            "latch-0000000009".to_owned(),
            latch(B, 5),
            "nested".to_owned(),
            "_c_x-latch-0000000001".to_owned(),
            format!("_c_{A}-latch-000000001"),
        ];
        let order: Vec<&str> = candidates(&children).iter().map(|c| c.node).collect();
        assert_eq!(
            order,
            vec![
                latch(B, 5).as_str(),
                latch(A, 7).as_str(),
                "latch-0000000009"
            ]
        );
        assert!(node_prefix(Uuid::nil()).ends_with("-latch-"));
        let ours = format!("{}0000000001", node_prefix(Uuid::new_v4()));
        assert!(candidate(&ours).is_some(), "{ours}");
    }

    #[test]
    fn lock_dialects_ignore_latch_nodes() {
        use crate::recipe::dialect::Dialect;
        for dialect in Dialect::ALL {
            assert_eq!(dialect.contender(&latch(A, 1)), None, "{dialect}");
            assert_eq!(dialect.contender("latch-0000000001"), None, "{dialect}");
        }
    }

    #[test]
    fn terms_are_lock_node_tokens() {
        assert_eq!(term_of(42), local_token(42, 0));
        assert!(term_of(43) > term_of(42));
    }
}
