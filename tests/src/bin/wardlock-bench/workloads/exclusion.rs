//! `contended` and `rw`: K clients on one lock, each with its own session (or
//! guest instance), M ops each, the exclusion check of
//! [`crate::check`] in every critical section; systems interleaved in
//! rounds. `contended`: every op exclusive. `rw`: each op a write with
//! probability 20 % (writers exclusive, readers shared). Violations (overlaps
//! seen plus lost updates) must be 0.

use super::Workload;
use super::rounds::{ROUNDS, Shape, interleaved};
use crate::check::Plan;
use crate::env::Env;
use crate::report::Row;
use crate::systems::System;

/// Share of writes in `rw`.
pub(super) const RW_WRITE_PERCENT: u64 = 20;

/// Runs `contended` or `rw`.
///
/// # Errors
/// The first failing client.
pub(super) async fn run(
    env: &Env,
    workload: Workload,
    systems: &[System],
) -> anyhow::Result<Vec<Row>> {
    let shape = Shape {
        clients: env.args.clients,
        ops: env.args.ops,
        spread: false,
        plan: match workload {
            Workload::Rw => |client| Plan::Mixed {
                write_percent: RW_WRITE_PERCENT,
                seed: client + 1,
            },
            _ => |_| Plan::Exclusive,
        },
        check: true,
        rounds: ROUNDS,
    };
    let measured = interleaved(env, workload, systems, &shape).await?;
    Ok(measured
        .iter()
        .map(|m| Row::new(m.system, workload, shape.clients, &m.samples).with("writes", m.writes))
        .collect())
}
