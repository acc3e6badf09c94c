//! A lock's queue as a dialect orders it, and whose turn it is.

use super::dialect::{Contender, Dialect};
use wardlock_backend::Mode;

/// The contenders among `children`, in queue order.
pub(crate) fn queue(dialect: Dialect, children: &[String]) -> Vec<Contender<'_>> {
    let mut contenders: Vec<Contender<'_>> = children
        .iter()
        .filter_map(|c| dialect.contender(c))
        .collect();
    contenders.sort_by(|a, b| a.key.cmp(b.key).then(a.node.cmp(b.node)));
    contenders
}

/// Where a node stands in its lock's queue.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Turn<'a> {
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
pub(crate) fn turn<'a>(queue: &[Contender<'a>], node: &str, mode: Mode) -> Turn<'a> {
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
pub(crate) fn holds(queue: &[Contender<'_>], index: usize) -> bool {
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

    /// A uuid-shaped stand-in for a test tag (its bytes in hex, zero-padded), so
    /// nodes match the dialects' whole node patterns.
    fn uuid(tag: &str) -> String {
        let hex: String = tag.bytes().map(|b| format!("{b:02x}")).collect();
        let hex = format!("{hex:0<32}");
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }
    fn w(tag: &str, seq: u32) -> String {
        format!("_c_{}-__WRIT__{seq:010}", uuid(tag))
    }
    fn r(tag: &str, seq: u32) -> String {
        format!("_c_{}-__READ__{seq:010}", uuid(tag))
    }

    fn turn_of<'a>(d: Dialect, children: &'a [String], node: &str, mode: Mode) -> Turn<'a> {
        turn(&queue(d, children), node, mode)
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
            format!("_c_{}-lock-0000000002", uuid("b")),
            format!("_c_{}-lock-0000000009", uuid("a")),
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
    #[test]
    fn hostile_children_are_not_contenders() {
        let children = vec![
            "x__WRIT__0".to_owned(),
            "lock-0".to_owned(),
            "0".to_owned(),
            "-x".to_owned(),
            "_c_x-__WRIT__0000000001".to_owned(),
            format!("{}__lock__0000000001", "g".repeat(32)),
            format!("_c_{}-__READ__000000001", uuid("short")),
            w("a", 5),
        ];
        for d in [Dialect::CuratorRw, Dialect::Kazoo] {
            let q = queue(d, &children);
            assert!(q.len() <= 1, "{d}: {q:?}");
        }
        assert_eq!(
            turn_of(Dialect::CuratorRw, &children, &w("a", 5), Mode::Exclusive),
            Turn::Held
        );
        assert!(queue(Dialect::CuratorMutex, &children).is_empty());
    }
}
