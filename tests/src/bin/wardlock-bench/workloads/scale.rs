//! `scale`: 1,000 guest instances in one host on 100 lock names, all queued at
//! once. The host holds all 100 names; 1,000 `bench-guest` instances start
//! (instance i on name i mod 100, max(1, M / 100) exclusive ops each, checking a
//! counter file per name); once every instance waits (in-memory: 11 entries
//! per queue; ZooKeeper: 1,000 watches on the server) the host releases the
//! names. Measured: all instances complete, 0 violations, the process's peak
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

/// Guest instances.
pub const INSTANCES: u64 = 1000;
/// Lock names they share.
pub const NAMES: u64 = 100;

/// Longest wait for every instance to queue: a hang guard.
const QUEUE_GUARD: Duration = Duration::from_secs(300);

/// Runs the workload.
///
/// # Errors
/// When an instance fails or they never all queue.
pub async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &system in systems {
        rows.push(scale(env, system).await?);
    }
    Ok(rows)
}

async fn scale(env: &Env, system: System) -> anyhow::Result<Row> {
    let per_instance = (env.args.ops / NAMES).max(1);
    progress(&format!(
        "scale: {} ({INSTANCES} instances × {per_instance} ops on {NAMES} names)",
        system.name()
    ));
    let names: Vec<LockName> = (0..NAMES)
        .map(|n| lock_name(Workload::Scale, system, &format!("n{n}")))
        .collect::<Result<_, _>>()?;
    let files: Vec<String> = (0..NAMES)
        .map(|n| format!("scale-{}-{n}", system.name()))
        .collect();
    for file in &files {
        check::reset(&env.dir().join(file))?;
    }
    let backend: &dyn LockBackend = match system {
        System::ZooKeeperGuest => &env.zk()?.backend,
        _ => &env.memory,
    };
    let holder = backend.open_session("wardlock-bench scale gates");
    let mut gates = Vec::new();
    for name in &names {
        gates.push(holder.acquire(name, Mode::Exclusive, None).await?.id);
    }
    let specs = (0..INSTANCES)
        .map(|i| {
            let n = usize::try_from(i % NAMES).unwrap_or(0);
            LoopSpec {
                lock: names[n].clone(),
                plan: Plan::Exclusive,
                ops: per_instance,
                check: Some(files[n].clone()),
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
    let running = Prepared::new(env, system, specs).await?.start();
    wait_all_queued(env, system, &names, watches).await?;
    progress(&format!("scale: {} all {INSTANCES} queued", system.name()));
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
    let writes_per_name = (INSTANCES / NAMES) * per_instance;
    for file in &files {
        samples.violations += check::lost_updates(&env.dir().join(file), writes_per_name)?;
    }
    Ok(Row::new(system, Workload::Scale, INSTANCES, &samples)
        .with("instances_completed", phase.results.len())
        .with("names", NAMES)
        .with("rss_before_mib", mib(rss_before))
        .with("peak_rss_mib", mib(peak)))
}

/// Waits until every instance waits for its name.
async fn wait_all_queued(
    env: &Env,
    system: System,
    names: &[LockName],
    watches_before: u64,
) -> anyhow::Result<()> {
    match system {
        System::ZooKeeperGuest => {
            env.zk()?
                .stats
                .wait_watches(watches_before + INSTANCES, QUEUE_GUARD)
                .await
        }
        _ => {
            let per_name = usize::try_from(INSTANCES / NAMES + 1).unwrap_or(usize::MAX);
            for name in names {
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
