//! Lock node names and their order, compatible with Curator's
//! `InterProcessReadWriteLock` layout.
//!
//! A node is `_c_<uuid>-__WRIT__<seq>` (exclusive) or `_c_<uuid>-__READ__<seq>`
//! (shared), created EPHEMERAL_SEQUENTIAL under the lock's parent node. `<uuid>` is
//! Curator's "protection" prefix: it lets a client find its own node after a
//! connection loss during `create`.

use uuid::Uuid;

use crate::backend::Mode;

/// Marker of an exclusive (write) node.
pub const WRITE_MARKER: &str = "__WRIT__";
/// Marker of a shared (read) node.
pub const READ_MARKER: &str = "__READ__";

/// The name prefix of a new node; ZooKeeper appends the 10-digit sequence.
pub fn node_prefix(uuid: Uuid, mode: Mode) -> String {
    let marker = match mode {
        Mode::Exclusive => WRITE_MARKER,
        Mode::Shared => READ_MARKER,
    };
    format!("_c_{}-{marker}", uuid.as_hyphenated())
}

/// The key lock nodes sort by: the text after the last `__READ__`, then after the
/// last `__WRIT__` (the server sequence); the whole name without a marker.
pub fn sort_key(node: &str) -> &str {
    strip_through(strip_through(node, READ_MARKER), WRITE_MARKER)
}

/// The text after the last `marker`, or all of `text` without one.
fn strip_through<'a>(text: &'a str, marker: &str) -> &'a str {
    match text.rfind(marker) {
        Some(at) => &text[at + marker.len()..],
        None => text,
    }
}

/// True for nodes of this recipe (write or read markers); other children of a lock
/// parent (for example the parent of a nested lock name) are not contenders.
pub fn is_lock_node(node: &str) -> bool {
    node.contains(WRITE_MARKER) || node.contains(READ_MARKER)
}

/// True for exclusive (write) nodes.
pub fn is_write_node(node: &str) -> bool {
    node.contains(WRITE_MARKER)
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

/// Decides `node`'s turn among `children` (any order). Exclusive: held when first.
/// Shared: held when no write node sorts before it; else wait for the nearest
/// preceding write node. Either way each waiter watches exactly one node.
pub fn turn<'a>(children: &'a [String], node: &str, mode: Mode) -> Turn<'a> {
    let mut contenders: Vec<&str> = children
        .iter()
        .map(String::as_str)
        .filter(|c| is_lock_node(c))
        .collect();
    contenders.sort_by(|a, b| sort_key(a).cmp(sort_key(b)).then(a.cmp(b)));
    let Some(index) = contenders.iter().position(|c| *c == node) else {
        return Turn::Missing;
    };
    let ahead = &contenders[..index];
    let blocker = match mode {
        Mode::Exclusive => ahead.last(),
        Mode::Shared => ahead.iter().rev().find(|c| is_write_node(c)),
    };
    match blocker {
        None => Turn::Held,
        Some(node) => Turn::WaitFor(node),
    }
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

    #[test]
    fn prefix_is_curator_protected_name() {
        let uuid = Uuid::nil();
        assert_eq!(
            node_prefix(uuid, Mode::Exclusive),
            "_c_00000000-0000-0000-0000-000000000000-__WRIT__"
        );
        assert!(node_prefix(uuid, Mode::Shared).ends_with("-__READ__"));
    }

    #[test]
    fn sorts_by_sequence_not_uuid() {
        assert_eq!(sort_key(&w("ffff", 7)), "0000000007");
        assert_eq!(sort_key(&r("0000", 8)), "0000000008");
        assert_eq!(sort_key("foreign"), "foreign");
        let children = vec![w("aaaa", 3), r("zzzz", 1), w("0000", 2)];
        assert_eq!(turn(&children, &r("zzzz", 1), Mode::Shared), Turn::Held);
        assert_eq!(
            turn(&children, &w("0000", 2), Mode::Exclusive),
            Turn::WaitFor(&children[1])
        );
        assert_eq!(
            turn(&children, &w("aaaa", 3), Mode::Exclusive),
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
        assert_eq!(turn(&children, &r("a", 1), Mode::Shared), Turn::Held);
        assert_eq!(
            turn(&children, &r("c", 3), Mode::Shared),
            Turn::WaitFor(&children[1])
        );
        assert_eq!(
            turn(&children, &r("f", 6), Mode::Shared),
            Turn::WaitFor(&children[3])
        );
        assert_eq!(
            turn(&children, &w("d", 4), Mode::Exclusive),
            Turn::WaitFor(&children[2])
        );
        assert_eq!(turn(&children, &w("zz", 9), Mode::Exclusive), Turn::Missing);
    }

    #[test]
    fn non_lock_children_are_ignored() {
        let children = vec!["nested".to_owned(), "0000000000".to_owned(), w("a", 5)];
        assert_eq!(turn(&children, &w("a", 5), Mode::Exclusive), Turn::Held);
    }
}
