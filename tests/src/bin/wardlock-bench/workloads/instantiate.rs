//! `instantiate`: what one guest invocation costs the host. M times, sequentially:
//! `Runner::run` of `bench-guest loop … 0` (new Store and WASI context,
//! instantiation from the pre-linked `InstancePre`, `run` doing no lock op,
//! Store dropped), timed end to end. Two variants, interleaved in rounds: the
//! default on-demand allocator (`Runtime::new`) and the pooling allocator
//! (`Runtime::with_pooling`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::runner::{DEFAULT_MEMORY_LIMIT, Preopen, Runner, RunnerConfig, Runtime, Stdio};

use super::rounds::ROUNDS;
use super::{Workload, progress};
use crate::env::{Env, GUEST_RUN_LIMIT};
use crate::report::Row;
use crate::stats::Samples;
use crate::systems::System;
use crate::systems::guest::{GUEST_DATA_DIR, succeeded};
use wardlock_tests::Guest;

/// Warm-up invocations per variant (not recorded).
const WARM_UP: u64 = 10;

/// Runs the workload (on `memory-guest`, the only system it applies to).
///
/// # Errors
/// When an instance fails or the pool cannot be set up.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    if !systems.contains(&System::MemoryGuest) {
        return Ok(Vec::new());
    }
    let variants: [(&'static str, Arc<Runner>); 2] = [
        ("on-demand", env.guest_runner(System::MemoryGuest)?),
        ("pooling", pooling_runner(env)?),
    ];
    let args: Vec<String> = ["loop", "bench/instantiate", "exclusive", "0"]
        .map(String::from)
        .to_vec();
    let mut measured: Vec<Samples> = vec![Samples::default(); variants.len()];
    for (variant, runner) in &variants {
        progress(&format!(
            "instantiate: {variant} warm-up ({WARM_UP} instances)"
        ));
        for instance in 0..WARM_UP {
            invoke(runner, instance, &args).await?;
        }
    }
    let total = env.args.ops;
    for round in 0..ROUNDS {
        let share = total / ROUNDS + u64::from(round < total % ROUNDS);
        for ((variant, runner), samples) in variants.iter().zip(&mut measured) {
            progress(&format!(
                "instantiate: {variant} round {}/{ROUNDS} ({share} instances)",
                round + 1
            ));
            for instance in 0..share {
                let took = invoke(runner, instance, &args).await?;
                samples
                    .latencies_ns
                    .push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
                samples.wall += took;
                samples.ops += 1;
            }
        }
    }
    Ok(variants
        .iter()
        .zip(&measured)
        .map(|((variant, _), samples)| {
            Row::new(System::MemoryGuest, Workload::Instantiate, 1, samples).variant(variant)
        })
        .collect())
}

/// One invocation, timed.
async fn invoke(runner: &Runner, instance: u64, args: &[String]) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let report = runner
        .run(usize::try_from(instance).unwrap_or(usize::MAX), args)
        .await;
    let took = started.elapsed();
    succeeded(&report)?;
    Ok(took)
}

/// A runner like the on-demand one, on an engine with the pooling allocator.
fn pooling_runner(env: &Env) -> anyhow::Result<Arc<Runner>> {
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.max_memory_size(DEFAULT_MEMORY_LIMIT);
    let runtime = Runtime::with_pooling(pool)?;
    let component = runtime.compile(Path::new(Guest::BenchGuest.path()))?;
    let config = RunnerConfig {
        backend: Arc::new(env.memory.clone()),
        preopens: vec![Preopen {
            host: env.dir().to_owned(),
            guest: GUEST_DATA_DIR.to_owned(),
        }],
        timeout: Some(GUEST_RUN_LIMIT),
        stdio: Stdio::Capture,
        ..RunnerConfig::default()
    };
    Ok(Arc::new(Runner::new(
        &runtime,
        &component,
        "bench-guest.wasm",
        config,
    )?))
}
