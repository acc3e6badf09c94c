//! `spread`: K clients, each on an exclusive lock of its own (K different
//! names, nobody contends), M ops each, on every system (interleaved rounds).
//! What it measures is whether clients of one host slow each other down through
//! what they share: wardlock's ZooKeeper session (compare `--zk-sessions 1` with
//! `--zk-sessions 4`), not the lock.

use super::Workload;
use super::rounds::{ROUNDS, Shape, interleaved};
use crate::check::Plan;
use crate::env::Env;
use crate::report::Row;
use crate::systems::System;

/// Runs the workload.
///
/// # Errors
/// The first failing loop.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let shape = Shape {
        clients: env.args.clients,
        spread: true,
        ops: env.args.ops,
        plan: |_| Plan::Exclusive,
        check: false,
        rounds: ROUNDS,
    };
    let measured = interleaved(env, Workload::Spread, systems, &shape).await?;
    Ok(measured
        .iter()
        .map(|m| Row::new(m.system, Workload::Spread, shape.clients, &m.samples))
        .collect())
}
