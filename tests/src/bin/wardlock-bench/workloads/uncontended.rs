//! `uncontended`: one client, M acquire+release pairs of an exclusive lock
//! nobody else wants, on every system, in [`ROUNDS`] interleaved rounds.
//!
//! Each row also gives its rounds' p50s (`round_p50_us`), and the ZooKeeper
//! rows the median over the rounds of their p50 ÷ Curator's p50 in the same
//! round (`p50_vs_curator_round_median`, and `_shared_` against
//! `curator-shared`): issue 39's measure, less sensitive to one noisy round
//! than the ratio of the pooled p50s.

use serde_json::Value;

use super::Workload;
use super::rounds::{Measured, Shape, interleaved};
use crate::check::Plan;
use crate::env::Env;
use crate::report::{Row, round};
use crate::stats::median;
use crate::systems::System;

/// Measured rounds (issue 39: the median of 5 interleaved rounds).
const ROUNDS: u64 = 5;

/// Runs the workload.
///
/// # Errors
/// The first failing loop.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let shape = Shape {
        clients: 1,
        ops: env.args.ops,
        spread: false,
        plan: |_| Plan::Exclusive,
        check: false,
        rounds: ROUNDS,
    };
    let measured = interleaved(env, Workload::Uncontended, systems, &shape).await?;
    let rounds_of = |system: System| {
        measured
            .iter()
            .find(|m| m.system == system)
            .map(|m| m.round_p50_us.as_slice())
    };
    let curator = rounds_of(System::Curator);
    let shared = rounds_of(System::CuratorShared);
    Ok(measured
        .iter()
        .map(|m| {
            let rounds: Vec<Value> = m
                .round_p50_us
                .iter()
                .map(|&p50| round(Some(p50), 2))
                .collect();
            let mut row = Row::new(m.system, Workload::Uncontended, 1, &m.samples)
                .with("round_p50_us", rounds);
            if m.system.uses_zookeeper() {
                if m.system != System::Curator {
                    let median = median_ratio(m, curator);
                    row = row.with("p50_vs_curator_round_median", round(median, 3));
                }
                if m.system != System::CuratorShared {
                    let median = median_ratio(m, shared);
                    row = row.with("p50_vs_curator_shared_round_median", round(median, 3));
                }
            }
            row
        })
        .collect())
}

/// The median over the rounds of `m`'s p50 ÷ `base`'s p50 in the same round.
fn median_ratio(m: &Measured, base: Option<&[f64]>) -> Option<f64> {
    let base = base?;
    let mut ratios: Vec<f64> = m
        .round_p50_us
        .iter()
        .zip(base)
        .filter(|&(_, &b)| b > 0.0)
        .map(|(&a, &b)| a / b)
        .collect();
    median(&mut ratios)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn the_ratio_is_taken_round_by_round() {
        let m = Measured {
            system: System::ZooKeeperGuest,
            samples: crate::stats::Samples::default(),
            writes: 0,
            round_p50_us: vec![10.0, 20.0, 100.0, 5.0, 10.0],
        };
        let curator = [100.0, 100.0, 100.0, 100.0, 50.0];
        // Ratios 0.1, 0.2, 1.0, 0.05, 0.2: the median is 0.2.
        assert_eq!(median_ratio(&m, Some(&curator)), Some(0.2));
        assert_eq!(median_ratio(&m, None), None);
    }
}
