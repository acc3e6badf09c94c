//! `host-call`: the cost of the WIT boundary. One client does 10 × M
//! acquire+release pairs on the in-memory backend, natively (`LockSession`) and
//! from a guest (`acquire` import + dropping the `lock` resource: two host
//! calls), interleaved. The guest's extra time per pair is the overhead.

use super::Workload;
use super::rounds::{ROUNDS, Shape, interleaved};
use crate::check::Plan;
use crate::env::Env;
use crate::report::Row;
use crate::systems::System;

/// Ops multiplier: the calls take microseconds, so take more samples.
pub(super) const OPS_FACTOR: u64 = 10;

/// Runs the workload.
///
/// # Errors
/// The first failing loop.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let shape = Shape {
        clients: 1,
        spread: false,
        ops: env.args.ops.saturating_mul(OPS_FACTOR),
        plan: |_| Plan::Exclusive,
        check: false,
        rounds: ROUNDS,
    };
    let measured = interleaved(env, Workload::HostCall, systems, &shape).await?;
    let native_p50 = measured
        .iter()
        .find(|m| m.system == System::MemoryNative)
        .and_then(|m| m.samples.percentile_us(0.5));
    Ok(measured
        .iter()
        .map(|m| {
            let row = Row::new(m.system, Workload::HostCall, 1, &m.samples);
            match (m.system, m.samples.percentile_us(0.5), native_p50) {
                (System::MemoryGuest, Some(guest), Some(native)) => row
                    .with("host_calls_per_op", 2)
                    .with("overhead_us", ((guest - native) * 100.0).round() / 100.0),
                _ => row,
            }
        })
        .collect())
}
