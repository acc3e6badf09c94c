//! `lock-set`: Jepsen's lock-set under pauses (issue 35), the long form of
//! `tests/e2e/lock_set.rs`. Per engine and per variant, `--rounds` rounds of
//! 3 `wardlock run` hosts × 2 `plugins/lock-set` guests adding unique
//! elements to one set under one lock, while a nemesis SIGSTOPs the holder's
//! host inside its read-to-write window past its 2 s session (and every
//! fifth fault SIGKILLs it and starts a replacement); the history checker of
//! `wardlock_tests::lock_set::history` judges each round. `plain` writes a
//! shared file (nothing fences it: acknowledged adds get lost), `guarded`
//! the guarded store (a resumed holder's write is refused with `lost`).
//!
//! No latency: the row reports counts (acknowledged, lost, stale_refused,
//! unknown, the nemesis's pauses and kills) and `violations` (two holders at
//! once without `lost`, guarded writes out of token order), which fail the
//! run as any workload's violations do.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{Workload, progress};
use crate::env::Env;
use crate::report::Row;
use crate::stats::Samples;
use crate::systems::System;
use wardlock_tests::lock_set::history::Variant;
use wardlock_tests::lock_set::{Scenario, run_rounds};

/// Runs the workload on the guest systems selected (`wardlock-guest`:
/// ZooKeeper, `etcd-guest`: etcd).
///
/// # Errors
/// When a round fails to run (a host cannot start, a round outlives its
/// limit, the final set cannot be read).
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let rounds = env.args.rounds;
    // Lock names of this run only: the guarded store outlives the run on a
    // server the caller gave.
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut rows = Vec::new();
    for &system in systems {
        let (engine, flag, address) = match system {
            System::ZooKeeperGuest => ("zookeeper", "--zookeeper", env.zk()?.address.clone()),
            System::EtcdGuest => ("etcd", "--etcd", env.etcd()?.address.clone()),
            _ => continue,
        };
        for variant in [Variant::Plain, Variant::Guarded] {
            progress(&format!(
                "lock-set: {} {} ({rounds} rounds)",
                system.name(),
                variant.name()
            ));
            let scenario = Scenario::new(vec![flag.to_owned(), address.clone()], variant);
            let prefix = format!("bench/{engine}/{}/run{run_id}", variant.name());
            let totals = run_rounds(&scenario, &prefix, rounds).await?;
            for line in &totals.timeline {
                progress(&format!("  {line}"));
            }
            for problem in &totals.problems {
                progress(&format!("  {problem}"));
            }
            let counts = &totals.counts;
            let samples = Samples {
                ops: counts.acknowledged,
                violations: counts.violations(),
                ..Samples::default()
            };
            let guests = (scenario.hosts * scenario.instances) as u64;
            rows.push(
                Row::new(system, Workload::LockSet, guests, &samples)
                    .variant(variant.name())
                    .with("rounds", totals.rounds)
                    .with("acknowledged", counts.acknowledged)
                    .with("lost", counts.lost)
                    .with("stale_refused", counts.stale_refused)
                    .with("unknown", counts.unknown)
                    .with("overlaps", counts.overlaps)
                    .with("order_violations", counts.order_violations)
                    .with("pauses", totals.pauses)
                    .with("kills", totals.kills)
                    .with("hosts", scenario.hosts as u64)
                    .with("session_timeout_s", scenario.session_timeout_secs)
                    .with("delay_ms", scenario.delay.as_millis() as u64)
                    .with("wall_s", (totals.wall.as_secs_f64() * 10.0).round() / 10.0),
            );
        }
    }
    Ok(rows)
}
