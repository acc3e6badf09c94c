//! Finding a wait-for cycle: pure graph code, no locks and no clocks, so the
//! rules are tested on their own.
//!
//! Nodes are parties (a session of this host, or a contender the engine
//! lists); an edge `a -w-> b` says party `a` waits, through its wait `w`,
//! for a lock `b` holds in a conflicting mode. A cycle is a deadlock: no
//! party on it can be granted before another on it releases.

use std::collections::HashSet;
use std::hash::Hash;

use crate::backend::Mode;

/// Whether a wait in mode `wait` is blocked by a holder in mode `held`: an
/// exclusive wait by every holder, a shared wait only by an exclusive holder
/// (two shared grants never conflict, so shared/shared is never an edge).
pub(super) fn conflicts(wait: Mode, held: Mode) -> bool {
    matches!((wait, held), (Mode::Exclusive, _) | (_, Mode::Exclusive))
}

/// One step of a cycle: `party` waits through `wait` for the next step's
/// party (the last step's for the first's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Step<P, W> {
    /// Who waits.
    pub(super) party: P,
    /// The wait through which it waits for the next party.
    pub(super) wait: W,
}

/// One party on the search path: the party, its edges not yet tried, and
/// the wait of the edge being followed.
type Frame<P, W> = (P, std::vec::IntoIter<(W, P)>, Option<W>);

/// A cycle through `start`, if there is one: the steps from `start` around
/// and back to it, following `edges(party)` (each of `party`'s waits and a
/// party it waits for through it). Depth first, each party visited once, so
/// the cost is bounded by the edges reachable from `start`; a cycle that
/// does not pass through `start` is not looked for (it was looked for when
/// its own closing wait was queued).
pub(super) fn cycle_through<P, W, I>(
    start: P,
    mut edges: impl FnMut(&P) -> I,
) -> Option<Vec<Step<P, W>>>
where
    P: Clone + Eq + Hash,
    W: Clone,
    I: IntoIterator<Item = (W, P)>,
{
    let mut visited = HashSet::new();
    visited.insert(start.clone());
    // The path so far: each step with the edges of its party not yet tried.
    let mut path: Vec<Frame<P, W>> = vec![(
        start.clone(),
        edges(&start).into_iter().collect::<Vec<_>>().into_iter(),
        None,
    )];
    while let Some((_, pending, taken)) = path.last_mut() {
        let Some((wait, next)) = pending.next() else {
            path.pop();
            continue;
        };
        *taken = Some(wait);
        if next == start {
            return Some(
                path.into_iter()
                    .filter_map(|(party, _, wait)| wait.map(|wait| Step { party, wait }))
                    .collect(),
            );
        }
        if visited.insert(next.clone()) {
            let more = edges(&next).into_iter().collect::<Vec<_>>().into_iter();
            path.push((next, more, None));
        }
    }
    None
}

/// Every cycle's parties and waits in `edges` (a whole graph, as the
/// cross-host scan builds it): one cycle per strongly reachable start, each
/// reported once (by its set of parties).
pub(super) fn all_cycles<P, W>(
    parties: &[P],
    edges: impl Fn(&P) -> Vec<(W, P)>,
) -> Vec<Vec<Step<P, W>>>
where
    P: Clone + Eq + Hash + Ord,
    W: Clone,
{
    let mut seen: HashSet<Vec<P>> = HashSet::new();
    let mut found = Vec::new();
    for start in parties {
        if let Some(cycle) = cycle_through(start.clone(), &edges) {
            let mut key: Vec<P> = cycle.iter().map(|step| step.party.clone()).collect();
            key.sort();
            if seen.insert(key) {
                found.push(cycle);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A graph of named parties: `(waiter, wait id, holder)`.
    fn graph(
        edges: &[(&'static str, u32, &'static str)],
    ) -> HashMap<&'static str, Vec<(u32, &'static str)>> {
        let mut map: HashMap<_, Vec<_>> = HashMap::new();
        for &(from, wait, to) in edges {
            map.entry(from).or_default().push((wait, to));
        }
        map
    }

    fn through(
        g: &HashMap<&'static str, Vec<(u32, &'static str)>>,
        start: &'static str,
    ) -> Option<Vec<Step<&'static str, u32>>> {
        cycle_through(start, |p| g.get(p).cloned().unwrap_or_default())
    }

    #[test]
    fn an_ab_ba_cycle_is_found_from_either_side() {
        let g = graph(&[("a", 1, "b"), ("b", 2, "a")]);
        let cycle = through(&g, "b").expect("a cycle");
        assert_eq!(
            cycle,
            vec![
                Step {
                    party: "b",
                    wait: 2
                },
                Step {
                    party: "a",
                    wait: 1
                }
            ]
        );
        assert!(through(&g, "a").is_some());
    }

    #[test]
    fn a_longer_cycle_is_found_past_dead_ends() {
        let g = graph(&[
            ("a", 1, "x"),
            ("a", 2, "b"),
            ("x", 3, "y"),
            ("b", 4, "c"),
            ("c", 5, "a"),
        ]);
        let cycle = through(&g, "a").expect("a cycle");
        let parties: Vec<_> = cycle.iter().map(|s| s.party).collect();
        assert_eq!(parties, ["a", "b", "c"]);
        let waits: Vec<_> = cycle.iter().map(|s| s.wait).collect();
        assert_eq!(waits, [2, 4, 5]);
    }

    #[test]
    fn converging_waits_are_no_cycle() {
        // A, B and C all wait for x's holder H, who waits for nobody.
        let g = graph(&[("a", 1, "h"), ("b", 2, "h"), ("c", 3, "h")]);
        for start in ["a", "b", "c", "h"] {
            assert_eq!(through(&g, start), None, "from {start}");
        }
        assert!(
            all_cycles(&["a", "b", "c", "h"], |p| g
                .get(p)
                .cloned()
                .unwrap_or_default())
            .is_empty()
        );
    }

    #[test]
    fn a_cycle_not_through_the_start_is_left_to_its_own_closing_wait() {
        let g = graph(&[("s", 1, "a"), ("a", 2, "b"), ("b", 3, "a")]);
        assert_eq!(through(&g, "s"), None);
        assert!(through(&g, "a").is_some());
    }

    #[test]
    fn all_cycles_reports_each_cycle_once() {
        let g = graph(&[
            ("a", 1, "b"),
            ("b", 2, "a"),
            ("c", 3, "d"),
            ("d", 4, "c"),
            ("e", 5, "a"),
        ]);
        let cycles = all_cycles(&["a", "b", "c", "d", "e"], |p| {
            g.get(p).cloned().unwrap_or_default()
        });
        assert_eq!(cycles.len(), 2);
    }

    #[test]
    fn shared_waits_conflict_only_with_exclusive_holders() {
        assert!(!conflicts(Mode::Shared, Mode::Shared));
        assert!(conflicts(Mode::Shared, Mode::Exclusive));
        assert!(conflicts(Mode::Exclusive, Mode::Shared));
        assert!(conflicts(Mode::Exclusive, Mode::Exclusive));
    }
}
