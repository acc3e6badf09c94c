//! `uncontended`: one client, M acquire+release pairs of an exclusive lock
//! nobody else wants, on every system (interleaved rounds).

use super::Workload;
use super::rounds::{Shape, interleaved};
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
        clients: 1,
        ops: env.args.ops,
        spread: false,
        plan: |_| Plan::Exclusive,
        check: false,
    };
    let measured = interleaved(env, Workload::Uncontended, systems, &shape).await?;
    Ok(measured
        .iter()
        .map(|m| Row::new(m.system, Workload::Uncontended, 1, &m.samples))
        .collect())
}
