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
//! a connection loss during `create`. Only children matching a dialect's *whole*
//! node pattern (prefix, uuid, marker, 10-digit sequence) are contenders: a nested
//! lock's directory or any other foreign child never holds up a queue.

use uuid::Uuid;

use wardlock_backend::{BackendError, Mode};

const WRITE_MARKER: &str = "__WRIT__";
const READ_MARKER: &str = "__READ__";
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
pub(crate) struct Contender<'a> {
    /// The node's name.
    pub node: &'a str,
    /// What it sorts by: the sequence.
    pub key: &'a str,
    /// True for exclusive (write) nodes.
    pub exclusive: bool,
}

impl Dialect {
    /// Every dialect, for help texts.
    pub const ALL: [Dialect; 3] = [Dialect::CuratorRw, Dialect::CuratorMutex, Dialect::Kazoo];

    /// The dialect's name on the command line and in config files (as
    /// [`Mode::as_str`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::CuratorRw => "curator-rw",
            Dialect::CuratorMutex => "curator-mutex",
            Dialect::Kazoo => "kazoo",
        }
    }

    /// Parses a dialect name.
    ///
    /// # Errors
    /// [`UnknownDialect`] (its message lists the known names).
    pub fn parse(name: &str) -> Result<Dialect, UnknownDialect> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.as_str() == name)
            .ok_or_else(|| UnknownDialect(name.to_owned()))
    }

    /// How lock parents are created. Curator creates CONTAINER parents (reaped by
    /// the server once empty) and retries when one vanishes under it. kazoo creates
    /// its parent once per lock object and fails if it is gone later, so with kazoo
    /// parents are PERSISTENT, as kazoo itself makes them.
    pub(crate) fn parent_mode(self) -> zookeeper_client::CreateMode {
        match self {
            Dialect::CuratorRw | Dialect::CuratorMutex => zookeeper_client::CreateMode::Container,
            Dialect::Kazoo => zookeeper_client::CreateMode::Persistent,
        }
    }

    /// The name prefix of a new node; ZooKeeper appends the sequence.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] for shared locks in `curator-mutex`.
    pub(crate) fn node_prefix(self, uuid: Uuid, mode: Mode) -> Result<String, BackendError> {
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
    /// do not match the dialect's whole node pattern (a nested lock's directory, a
    /// foreign node).
    pub(crate) fn contender(self, node: &str) -> Option<Contender<'_>> {
        let (head, key) = split_sequence(node, self == Dialect::Kazoo)?;
        let (exclusive, uuid) = match self {
            Dialect::CuratorRw => {
                let protected = head.strip_prefix("_c_")?;
                if let Some(uuid) = protected.strip_suffix(WRITE_MARKER) {
                    (true, uuid.strip_suffix('-')?)
                } else {
                    (
                        false,
                        protected.strip_suffix(READ_MARKER)?.strip_suffix('-')?,
                    )
                }
            }
            Dialect::CuratorMutex => (
                true,
                head.strip_prefix("_c_")?
                    .strip_suffix(MUTEX_MARKER)?
                    .strip_suffix('-')?,
            ),
            Dialect::Kazoo => match head.strip_suffix(KAZOO_WRITE) {
                Some(uuid) => (true, uuid),
                None => (false, head.strip_suffix(KAZOO_READ)?),
            },
        };
        let uuid_ok = match self {
            Dialect::CuratorRw | Dialect::CuratorMutex => is_hyphenated_uuid(uuid),
            Dialect::Kazoo => uuid.len() == 32 && uuid.bytes().all(|b| b.is_ascii_hexdigit()),
        };
        uuid_ok.then_some(Contender {
            node,
            key,
            exclusive,
        })
    }

    /// The name of the shared node that downgrades `exclusive` (a node of ours):
    /// not sequential, it carries the exclusive node's sequence, so it sorts right
    /// beside it — ahead of every node queued after it. Curator ≥ 5.5 downgrades the
    /// same way. `None` when the dialect has no shared locks or `exclusive` is not
    /// one of its write nodes.
    pub(crate) fn downgrade_node(self, uuid: Uuid, exclusive: &str) -> Option<String> {
        let contender = self.contender(exclusive)?;
        if !contender.exclusive {
            return None;
        }
        match self {
            Dialect::CuratorMutex => None,
            Dialect::CuratorRw | Dialect::Kazoo => {
                let prefix = self.node_prefix(uuid, Mode::Shared).ok()?;
                Some(format!("{prefix}{}", contender.key))
            }
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Dialect::parse(name)
    }
}

/// A dialect name wardlock does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialect {0:?}; expected curator-rw, curator-mutex or kazoo")]
pub struct UnknownDialect(pub String);

/// Splits a ZooKeeper sequence off the end of `node`: 10 digits, or `-` and 9
/// digits once the parent's counter overflowed (`%010d`). kazoo's own pattern is
/// `-?\d{10}`, followed as written.
pub(crate) fn split_sequence(node: &str, kazoo: bool) -> Option<(&str, &str)> {
    let digits_at = node.len().checked_sub(10)?;
    let tail = node.get(digits_at..)?;
    if kazoo {
        if !tail.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let at = match node[..digits_at].strip_suffix('-') {
            Some(_) => digits_at - 1,
            None => digits_at,
        };
        return Some((&node[..at], &node[at..]));
    }
    let digits = tail.strip_prefix('-').unwrap_or(tail);
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| (&node[..digits_at], tail))
}

/// `8-4-4-4-12` lowercase hex digits, as Java's `UUID.toString` writes them.
pub(crate) fn is_hyphenated_uuid(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(Dialect::parse(d.as_str()), Ok(d));
        }
        let unknown = Dialect::parse("zk").expect_err("unknown");
        for d in Dialect::ALL {
            assert!(unknown.to_string().contains(d.as_str()), "{unknown}");
        }
    }

    #[test]
    fn downgrade_node_carries_the_write_sequence() {
        let uuid = Uuid::nil();
        let write = format!("_c_{}-__WRIT__0000000007", uuid.as_hyphenated());
        let read = Dialect::CuratorRw.downgrade_node(uuid, &write);
        assert_eq!(
            read,
            Some(format!("_c_{}-__READ__0000000007", uuid.as_hyphenated()))
        );
        let read = read.unwrap_or_default();
        assert!(
            Dialect::CuratorRw
                .contender(&read)
                .is_some_and(|c| !c.exclusive)
        );
        assert_eq!(Dialect::CuratorRw.downgrade_node(uuid, &read), None);
        let kazoo = format!("{}__lock__0000000003", uuid.simple());
        assert_eq!(
            Dialect::Kazoo.downgrade_node(uuid, &kazoo),
            Some(format!("{}__rlock__0000000003", uuid.simple()))
        );
        let mutex = format!("_c_{}-lock-0000000001", uuid.as_hyphenated());
        assert_eq!(Dialect::CuratorMutex.downgrade_node(uuid, &mutex), None);
    }
}
