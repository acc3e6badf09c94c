//! Lock node naming and ordering ("dialects"), so wardlock shares lock paths with
//! the lock clients already in use around it.
//!
//! - `curator-rw` (default): Curator's `InterProcessReadWriteLock`:
//!   `_c_<uuid>-__WRIT__<seq>` (exclusive) and `_c_<uuid>-__READ__<seq>` (shared),
//!   sorted by the text after the last `__READ__`, then after the last `__WRIT__`.
//! - `curator-mutex`: Curator's `InterProcessMutex`: `_c_<uuid>-lock-<seq>`, sorted by
//!   the text after the last `lock-`; exclusive only.
//! - `kazoo`: kazoo's `Lock`/`WriteLock` (`<uuid hex>__lock__<seq>`) and `ReadLock`
//!   (`<uuid hex>__rlock__<seq>`); contenders are children ending in one of those
//!   markers and a 10-digit sequence, compared as strings.
//!
//! Every dialect puts a uuid in the node name, so a client finds its own node after
//! a connection loss during `create`.

use uuid::Uuid;

use crate::backend::{BackendError, Mode};

/// Marker of a Curator read/write lock's write node.
pub const WRITE_MARKER: &str = "__WRIT__";
/// Marker of a Curator read/write lock's read node.
pub const READ_MARKER: &str = "__READ__";
const MUTEX_MARKER: &str = "lock-";
const KAZOO_WRITE: &str = "__lock__";
const KAZOO_READ: &str = "__rlock__";

/// A lock node layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Dialect {
    /// Curator `InterProcessReadWriteLock` (the default).
    #[default]
    CuratorRw,
    /// Curator `InterProcessMutex` (exclusive only).
    CuratorMutex,
    /// kazoo `Lock` / `WriteLock` / `ReadLock`.
    Kazoo,
}

/// A lock node of some dialect, as it stands in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contender<'a> {
    /// The node's name.
    pub node: &'a str,
    /// What it sorts by.
    pub key: &'a str,
    /// True for exclusive (write) nodes.
    pub exclusive: bool,
}

impl Dialect {
    /// Every dialect, for help texts.
    pub const ALL: [Dialect; 3] = [Dialect::CuratorRw, Dialect::CuratorMutex, Dialect::Kazoo];

    /// The dialect's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::CuratorRw => "curator-rw",
            Dialect::CuratorMutex => "curator-mutex",
            Dialect::Kazoo => "kazoo",
        }
    }

    /// Parses a dialect name.
    ///
    /// # Errors
    /// A message listing the known names.
    pub fn parse(name: &str) -> Result<Dialect, String> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| {
                format!("unknown dialect {name:?}; expected curator-rw, curator-mutex or kazoo")
            })
    }

    /// How lock parents are created. Curator creates CONTAINER parents (reaped by
    /// the server once empty) and retries when one vanishes under it. kazoo creates
    /// its parent once per lock object and fails if it is gone later, so with kazoo
    /// parents are PERSISTENT, as kazoo itself makes them.
    pub fn parent_mode(self) -> zookeeper_client::CreateMode {
        match self {
            Dialect::CuratorRw | Dialect::CuratorMutex => zookeeper_client::CreateMode::Container,
            Dialect::Kazoo => zookeeper_client::CreateMode::Persistent,
        }
    }

    /// The name prefix of a new node; ZooKeeper appends the sequence.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] for shared locks in `curator-mutex`.
    pub fn node_prefix(self, uuid: Uuid, mode: Mode) -> Result<String, BackendError> {
        Ok(match (self, mode) {
            (Dialect::CuratorRw, Mode::Exclusive) => {
                format!("_c_{}-{WRITE_MARKER}", uuid.as_hyphenated())
            }
            (Dialect::CuratorRw, Mode::Shared) => {
                format!("_c_{}-{READ_MARKER}", uuid.as_hyphenated())
            }
            (Dialect::CuratorMutex, Mode::Exclusive) => {
                format!("_c_{}-{MUTEX_MARKER}", uuid.as_hyphenated())
            }
            (Dialect::CuratorMutex, Mode::Shared) => {
                return Err(BackendError::Unsupported(
                    "the curator-mutex dialect (Curator InterProcessMutex) has no shared locks; use curator-rw or kazoo".into(),
                ));
            }
            (Dialect::Kazoo, Mode::Exclusive) => format!("{}{KAZOO_WRITE}", uuid.simple()),
            (Dialect::Kazoo, Mode::Shared) => format!("{}{KAZOO_READ}", uuid.simple()),
        })
    }

    /// The node as a contender of this dialect's locks, or `None` for children that
    /// are not (e.g. the parent node of a nested lock name).
    pub fn contender(self, node: &str) -> Option<Contender<'_>> {
        match self {
            Dialect::CuratorRw => {
                if !(node.contains(WRITE_MARKER) || node.contains(READ_MARKER)) {
                    return None;
                }
                Some(Contender {
                    node,
                    key: strip_through(strip_through(node, READ_MARKER), WRITE_MARKER),
                    exclusive: node.contains(WRITE_MARKER),
                })
            }
            Dialect::CuratorMutex => node.contains(MUTEX_MARKER).then(|| Contender {
                node,
                key: strip_through(node, MUTEX_MARKER),
                exclusive: true,
            }),
            Dialect::Kazoo => kazoo_contender(node),
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// kazoo's contender rule: `(__lock__|__rlock__)(-?\d{10})$`.
fn kazoo_contender(node: &str) -> Option<Contender<'_>> {
    let digits_at = node.len().checked_sub(10)?;
    let digits = node.get(digits_at..)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let head = &node[..digits_at];
    let (head, key_start) = match head.strip_suffix('-') {
        Some(head) => (head, digits_at - 1),
        None => (head, digits_at),
    };
    let exclusive = if head.ends_with(KAZOO_WRITE) && !head.ends_with(KAZOO_READ) {
        true
    } else if head.ends_with(KAZOO_READ) {
        false
    } else {
        return None;
    };
    Some(Contender {
        node,
        key: &node[key_start..],
        exclusive,
    })
}

/// The text after the last `marker`, or all of `text` without one.
fn strip_through<'a>(text: &'a str, marker: &str) -> &'a str {
    match text.rfind(marker) {
        Some(at) => &text[at + marker.len()..],
        None => text,
    }
}

/// The contenders among `children`, in queue order.
pub fn queue(dialect: Dialect, children: &[String]) -> Vec<Contender<'_>> {
    let mut contenders: Vec<Contender<'_>> = children
        .iter()
        .filter_map(|c| dialect.contender(c))
        .collect();
    contenders.sort_by(|a, b| a.key.cmp(b.key).then(a.node.cmp(b.node)));
    contenders
}

/// Where a node stands in its lock's queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn<'a> {
    /// The node holds the lock.
    Held,
    /// The node waits; watch this node (the one that must go first).
    WaitFor(&'a str),
    /// The node is not among the children (gone: session expired or deleted).
    Missing,
}

/// Decides `node`'s turn in `queue`. Exclusive: held when first. Shared: held when
/// no exclusive node is ahead; else wait for the nearest exclusive node ahead. Either
/// way each waiter watches exactly one node.
pub fn turn<'a>(queue: &[Contender<'a>], node: &str, mode: Mode) -> Turn<'a> {
    let Some(index) = queue.iter().position(|c| c.node == node) else {
        return Turn::Missing;
    };
    let ahead = &queue[..index];
    let blocker = match mode {
        Mode::Exclusive => ahead.last(),
        Mode::Shared => ahead.iter().rev().find(|c| c.exclusive),
    };
    match blocker {
        None => Turn::Held,
        Some(c) => Turn::WaitFor(c.node),
    }
}

/// True if the contender at `index` of `queue` holds the lock.
pub fn holds(queue: &[Contender<'_>], index: usize) -> bool {
    let mode = if queue[index].exclusive {
        Mode::Exclusive
    } else {
        Mode::Shared
    };
    turn(queue, queue[index].node, mode) == Turn::Held
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(uuid: &str, seq: u32) -> String {
        format!("_c_{uuid}-__WRIT__{seq:010}")
    }
    fn r(uuid: &str, seq: u32) -> String {
        format!("_c_{uuid}-__READ__{seq:010}")
    }

    fn turn_of<'a>(d: Dialect, children: &'a [String], node: &str, mode: Mode) -> Turn<'a> {
        turn(&queue(d, children), node, mode)
    }

    #[test]
    fn prefixes_follow_each_client_layout() {
        let uuid = Uuid::nil();
        let nil = "00000000-0000-0000-0000-000000000000";
        let p = |d: Dialect, m| d.node_prefix(uuid, m).unwrap();
        assert_eq!(
            p(Dialect::CuratorRw, Mode::Exclusive),
            format!("_c_{nil}-__WRIT__")
        );
        assert_eq!(
            p(Dialect::CuratorRw, Mode::Shared),
            format!("_c_{nil}-__READ__")
        );
        assert_eq!(
            p(Dialect::CuratorMutex, Mode::Exclusive),
            format!("_c_{nil}-lock-")
        );
        assert!(
            Dialect::CuratorMutex
                .node_prefix(uuid, Mode::Shared)
                .is_err()
        );
        assert_eq!(
            p(Dialect::Kazoo, Mode::Exclusive),
            format!("{}__lock__", "0".repeat(32))
        );
        assert_eq!(
            p(Dialect::Kazoo, Mode::Shared),
            format!("{}__rlock__", "0".repeat(32))
        );
        for d in Dialect::ALL {
            assert_eq!(Dialect::parse(d.name()), Ok(d));
        }
        assert!(Dialect::parse("zk").is_err());
    }

    #[test]
    fn curator_rw_sorts_by_sequence_not_uuid() {
        let children = vec![w("aaaa", 3), r("zzzz", 1), w("0000", 2)];
        let d = Dialect::CuratorRw;
        assert_eq!(
            turn_of(d, &children, &r("zzzz", 1), Mode::Shared),
            Turn::Held
        );
        assert_eq!(
            turn_of(d, &children, &w("0000", 2), Mode::Exclusive),
            Turn::WaitFor(&children[1])
        );
        assert_eq!(
            turn_of(d, &children, &w("aaaa", 3), Mode::Exclusive),
            Turn::WaitFor(&children[2])
        );
    }

    #[test]
    fn readers_wait_only_for_the_nearest_earlier_writer() {
        let children = vec![
            r("a", 1),
            w("b", 2),
            r("c", 3),
            w("d", 4),
            r("e", 5),
            r("f", 6),
        ];
        let d = Dialect::CuratorRw;
        assert_eq!(turn_of(d, &children, &r("a", 1), Mode::Shared), Turn::Held);
        assert_eq!(
            turn_of(d, &children, &r("c", 3), Mode::Shared),
            Turn::WaitFor(&children[1])
        );
        assert_eq!(
            turn_of(d, &children, &r("f", 6), Mode::Shared),
            Turn::WaitFor(&children[3])
        );
        assert_eq!(
            turn_of(d, &children, &w("d", 4), Mode::Exclusive),
            Turn::WaitFor(&children[2])
        );
        assert_eq!(
            turn_of(d, &children, &w("zz", 9), Mode::Exclusive),
            Turn::Missing
        );
    }

    #[test]
    fn curator_downgrade_read_node_keeps_writers_out() {
        // Curator's downgrade: a read node carrying its write node's sequence.
        let children = vec![r("down", 5), w("ours", 7)];
        let d = Dialect::CuratorRw;
        assert_eq!(
            turn_of(d, &children, &w("ours", 7), Mode::Exclusive),
            Turn::WaitFor(&children[0])
        );
    }

    #[test]
    fn non_lock_children_are_ignored() {
        let children = vec!["nested".to_owned(), "0000000000".to_owned(), w("a", 5)];
        assert_eq!(
            turn_of(Dialect::CuratorRw, &children, &w("a", 5), Mode::Exclusive),
            Turn::Held
        );
    }

    #[test]
    fn curator_mutex_orders_by_lock_sequence() {
        let children = vec![
            "_c_b-lock-0000000002".to_owned(),
            "_c_a-lock-0000000009".to_owned(),
            "x".to_owned(),
        ];
        let d = Dialect::CuratorMutex;
        assert_eq!(
            turn_of(d, &children, &children[0], Mode::Exclusive),
            Turn::Held
        );
        assert_eq!(
            turn_of(d, &children, &children[1], Mode::Exclusive),
            Turn::WaitFor(&children[0])
        );
    }

    #[test]
    fn kazoo_contenders_match_its_regex() {
        let d = Dialect::Kazoo;
        let lock = |seq: &str| format!("{}__lock__{seq}", "f".repeat(32));
        let rlock = |seq: &str| format!("{}__rlock__{seq}", "e".repeat(32));
        assert!(
            d.contender(&lock("0000000001"))
                .is_some_and(|c| c.exclusive)
        );
        assert!(
            d.contender(&rlock("0000000001"))
                .is_some_and(|c| !c.exclusive)
        );
        assert!(
            d.contender(&lock("-000000001")).is_none(),
            "9 digits after the dash"
        );
        assert!(d.contender(&lock("-0000000001")).is_some());
        assert!(d.contender("lease_holder").is_none());
        assert!(d.contender(&lock("000000001")).is_none());
        let children = vec![rlock("0000000001"), lock("0000000002"), rlock("0000000003")];
        assert_eq!(
            turn_of(d, &children, &children[0], Mode::Shared),
            Turn::Held
        );
        assert_eq!(
            turn_of(d, &children, &children[1], Mode::Exclusive),
            Turn::WaitFor(&children[0])
        );
        assert_eq!(
            turn_of(d, &children, &children[2], Mode::Shared),
            Turn::WaitFor(&children[1])
        );
    }
}
