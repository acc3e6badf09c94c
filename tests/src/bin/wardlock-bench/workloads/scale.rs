//! `scale`: N guest instances (`--instances`, default 1,000) in one host on
//! N / 10 lock names (at most 1,000), all queued at once. The host holds every
//! name; the `bench-guest` instances start (instance i on name i mod names,
//! max(1, M / 100) exclusive ops each, checking a counter file per name); once
//! every instance waits (in-memory: its queue entry; ZooKeeper with hand-off:
//! a waiter in the host's task, no node of its own; without hand-off: a watch
//! on the server each) the host releases the names. Measured: all instances complete, 0 violations, the process's peak
//! RSS (`VmHWM` of /proc/self/status, reset via /proc/self/clear_refs just
//! before the instances start), hand-off throughput after the release.

use std::time::Duration;

use anyhow::{Context, bail};
use wardlock_host::{LockBackend, LockName, Mode};

use super::{Workload, lock_name, progress};
use crate::check::{self, Plan};
use crate::cpu;
use crate::env::Env;
use crate::report::Row;
use crate::stats::Samples;
use crate::systems::{LoopSpec, Prepared, System, unix_ns};

/// Most lock names the instances share.
const MAX_NAMES: u64 = 1000;

/// Longest wait for every instance to queue: a hang guard.
const QUEUE_GUARD: Duration = Duration::from_secs(300);

/// Runs the workload.
///
/// # Errors
/// When an instance fails or they never all queue.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &system in systems {
        rows.push(scale(env, system).await?);
    }
    Ok(rows)
}

async fn scale(env: &Env, system: System) -> anyhow::Result<Row> {
    let instances = env.args.instances;
    let names_count = (instances / 10).clamp(1, MAX_NAMES);
    let per_instance = (env.args.ops / 100).max(1);
    progress(&format!(
        "scale: {} ({instances} instances × {per_instance} ops on {names_count} names)",
        system.name()
    ));
    let names: Vec<LockName> = (0..names_count)
        .map(|n| lock_name(Workload::Scale, system, &format!("n{n}")))
        .collect::<Result<_, _>>()?;
    let files: Vec<String> = (0..names_count)
        .map(|n| format!("scale-{}-{n}", system.name()))
        .collect();
    for file in &files {
        check::reset(&env.dir().join(file))?;
    }
    let backend: &dyn LockBackend = match system {
        System::ZooKeeperGuest => &env.zk()?.backend,
        _ => &env.memory,
    };
    let runner = env.pooled_guest_runner(system, instances)?;
    let holder = backend.open_session("wardlock-bench scale gates");
    let mut gates = Vec::new();
    for name in &names {
        gates.push(holder.acquire(name, Mode::Exclusive, None).await?.id);
    }
    let specs = (0..instances)
        .map(|i| {
            let n = usize::try_from(i % names_count).unwrap_or(0);
            LoopSpec {
                lock: names[n].clone(),
                plan: Plan::Exclusive,
                ops: per_instance,
                check: Some(files[n].clone()),
                reopen: true,
            }
        })
        .collect();
    let watches = match system {
        System::ZooKeeperGuest => env.zk()?.stats.watch_count()?,
        _ => 0,
    };
    let rss_before = rss_kib("VmRSS")?;
    reset_peak_rss()?;
    let mark = env.zk_mark(system);
    let cpu = cpu::process_cpu();
    let running = Prepared::with_guests(env, runner, specs).start();
    wait_all_queued(env, system, &names, instances, watches).await?;
    progress(&format!("scale: {} all {instances} queued", system.name()));
    let released = unix_ns();
    for gate in gates {
        holder.release(gate)?;
    }
    let mut phase = running.finish().await?;
    phase.zk = env.zk_since(mark);
    phase.cpu = cpu::since(cpu);
    let peak = rss_kib("VmHWM")?;
    let mut samples = Samples::default();
    samples.add_phase(&phase);
    let end = phase
        .results
        .iter()
        .map(|r| r.end_unix_ns)
        .max()
        .unwrap_or(released);
    samples.wall =
        Duration::from_nanos(u64::try_from(end.saturating_sub(released)).unwrap_or(u64::MAX));
    for (n, file) in files.iter().enumerate() {
        let on_name = (0..instances)
            .filter(|i| i % names_count == n as u64)
            .count() as u64;
        samples.violations += check::lost_updates(&env.dir().join(file), on_name * per_instance)?;
    }
    Ok(Row::new(system, Workload::Scale, instances, &samples)
        .with("instances", instances)
        .with("instances_completed", phase.results.len())
        .with("names", names_count)
        .with("rss_before_mib", mib(rss_before))
        .with("peak_rss_mib", mib(peak)))
}

/// How many of `instances` take name `n` of `names` (instance i takes name
/// i mod names).
fn on_name(instances: u64, names: u64, n: u64) -> u64 {
    instances / names + u64::from(n < instances % names)
}

/// Waits until every instance waits for its name.
async fn wait_all_queued(
    env: &Env,
    system: System,
    names: &[LockName],
    instances: u64,
    watches_before: u64,
) -> anyhow::Result<()> {
    // Each name: its instances, and the host's holder.
    let wanted = |n: usize| {
        usize::try_from(on_name(instances, names.len() as u64, n as u64) + 1).unwrap_or(usize::MAX)
    };
    match system {
        System::ZooKeeperGuest if env.zk()?.options.local_handoff => {
            let backend = &env.zk()?.backend;
            let started = tokio::time::Instant::now();
            for (n, name) in names.iter().enumerate() {
                // The task's count is asked for, not pushed: ask again until
                // it fits (bounded).
                while backend.local_contenders(name).await != wanted(n) {
                    if started.elapsed() > QUEUE_GUARD {
                        bail!("{name} never had {} local contenders", wanted(n));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            Ok(())
        }
        System::ZooKeeperGuest => {
            env.zk()?
                .stats
                .wait_watches(watches_before + instances, QUEUE_GUARD)
                .await
        }
        _ => {
            for (n, name) in names.iter().enumerate() {
                let per_name = wanted(n);
                tokio::time::timeout(
                    QUEUE_GUARD,
                    env.memory.wait_for(name, |q| q.len() == per_name),
                )
                .await
                .with_context(|| format!("{name} never had {per_name} entries"))?;
            }
            Ok(())
        }
    }
}

/// A `kB` field of /proc/self/status.
fn rss_kib(field: &str) -> anyhow::Result<u64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("no {field} in /proc/self/status"))
}

/// Resets `VmHWM` to the current RSS (Linux: `5` into /proc/self/clear_refs).
fn reset_peak_rss() -> anyhow::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5").context("resetting the peak RSS")?;
    let (now, peak) = (rss_kib("VmRSS")?, rss_kib("VmHWM")?);
    if peak > now + now / 10 + 1024 {
        bail!("VmHWM ({peak} kB) was not reset to VmRSS ({now} kB)");
    }
    Ok(())
}

fn mib(kib: u64) -> f64 {
    (kib as f64 / 1024.0 * 10.0).round() / 10.0
}
