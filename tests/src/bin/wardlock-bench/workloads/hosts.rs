//! `hosts`: many hosts, one lock. `--hosts` H host processes (each a
//! `wardlock-bench --host-child`, with a backend of its own: its own ZooKeeper
//! session or etcd lease and its own host-local hand-off) run `--clients` K
//! `bench-guest` instances each, all on one exclusive lock with the exclusion
//! check on one counter file; against Curator's H × K clients on the same
//! ZooKeeper (and etcd-floor's H × K on etcd), interleaved over [`ROUNDS`]
//! rounds after a warm-up. Each guest makes `--ops / 10` acquisitions over the
//! rounds.
//!
//! Latency is each acquisition's time from the guest's previous release to
//! this release (its wait plus its own critical section); `max_wait_ms` is the
//! longest, overall and per host (`host_max_wait_ms`), with each host's own
//! ops/s (`host_ops_per_s`): a starving host shows as one long wait.
//!
//! The fairness bound (ZooKeeper, hand-off on), checked as
//! `max_wait_vs_bound` ≤ 1: a host that learns of another host's waiter hands
//! the lock on locally at most `max_handoffs` more times or for `max_time`,
//! then releases its node and queues again behind the others, so a host's
//! turn lasts at most `T = hold + max_time + 2 writes + 3 reads` (the
//! hand-over's round trips, as in `fairness`). A guest with K − 1 local
//! guests ahead of it is served within `turns = ⌈K / (max_handoffs + 1)⌉` of
//! its host's turns, each after at most H − 1 other hosts' turns: `bound =
//! (turns × H + 1) × T`. Without hand-off every guest queues on its own node
//! in one FIFO of H × K: `bound = H × K × (hold + 2 writes + 3 reads)`.
//! `hold` is the p99 of one guest's uncontended acquisition with the same
//! check, on memory, measured in the same run; the round trips are measured in
//! the same run too. On etcd no bound is computed (`bound_ms` is null).

use super::release_on_death::round_trips;
use super::{Workload, lock_name, progress};
use crate::check;
use crate::env::{Env, WARDLOCK_ROOT};
use crate::report::{Row, round};
use crate::stats::Samples;
use crate::systems::host_process::HostProcess;
use crate::systems::{LoopSpec, Phase, System, run_phase};
use serde_json::Value;
use wardlock_tests::probe::ZkProbe;

/// Measured rounds, each system in turn.
pub(super) const ROUNDS: u64 = 3;

/// Ops of the lone guest that measures `hold`.
const HOLD_OPS: u64 = 200;

/// One system under measurement.
struct Entry {
    system: System,
    /// The host processes (guest systems); empty for the one-process clients.
    hosts: Vec<HostProcess>,
    samples: Samples,
    /// Per host process, over the rounds.
    per_host: Vec<Samples>,
    writes: u64,
}

/// Runs the workload.
///
/// # Errors
/// When a host process or client fails.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let (hosts, clients) = (env.args.hosts, env.args.clients);
    let per_guest = (env.args.ops / 10).max(ROUNDS);
    let hold_us = measure_hold(env).await?;
    let counter = |system: System| format!("hosts-{}", system.name());
    let mut entries = Vec::new();
    for &system in systems {
        let mut processes = Vec::new();
        if matches!(system, System::ZooKeeperGuest | System::EtcdGuest) {
            progress(&format!(
                "hosts: {}: starting {hosts} host processes × {clients} guests",
                system.name()
            ));
            for _ in 0..hosts {
                processes.push(HostProcess::start(env, system, clients, env.dir()).await?);
            }
        }
        entries.push(Entry {
            system,
            per_host: vec![Samples::default(); processes.len()],
            hosts: processes,
            samples: Samples::default(),
            writes: 0,
        });
    }
    let reset = || -> anyhow::Result<()> {
        for &system in systems {
            check::reset(&env.dir().join(counter(system)))?;
        }
        Ok(())
    };
    reset()?;
    let warm_up = (per_guest / 10).max(1);
    for entry in &mut entries {
        progress(&format!(
            "hosts: {} warm-up ({hosts} × {clients} × {warm_up} ops)",
            entry.system.name()
        ));
        let counter = counter(entry.system);
        phase(env, entry, hosts * clients, warm_up, &counter).await?;
    }
    reset()?;
    for round in 0..ROUNDS {
        let share = per_guest / ROUNDS + u64::from(round < per_guest % ROUNDS);
        for entry in &mut entries {
            progress(&format!(
                "hosts: {} round {}/{ROUNDS} ({hosts} × {clients} × {share} ops)",
                entry.system.name(),
                round + 1
            ));
            let counter = counter(entry.system);
            let (whole, per_host) = phase(env, entry, hosts * clients, share, &counter).await?;
            entry.samples.add_phase(&whole);
            entry.writes += whole.writes();
            for (samples, host) in entry.per_host.iter_mut().zip(&per_host) {
                samples.add_phase(host);
            }
        }
    }
    let bound_ms = zk_bound_ms(env, hold_us).await?;
    let mut rows = Vec::new();
    for entry in entries {
        let file = env.dir().join(counter(entry.system));
        let mut samples = entry.samples;
        samples.violations += check::lost_updates(&file, entry.writes)?;
        let max_wait_ms = max_ms(&samples);
        let mut row = Row::new(entry.system, Workload::Hosts, hosts * clients, &samples)
            .with("hosts", hosts)
            .with("guests_per_host", clients)
            .with("max_wait_ms", round(Some(max_wait_ms), 2));
        if !entry.per_host.is_empty() {
            let host_max: Vec<Value> = entry
                .per_host
                .iter()
                .map(|s| round(Some(max_ms(s)), 2))
                .collect();
            let host_ops: Vec<f64> = entry
                .per_host
                .iter()
                .map(|s| s.ops_per_s().map_or(0.0, |v| v.round()))
                .collect();
            row = row
                .with("host_max_wait_ms", host_max)
                .with("host_ops_per_s", host_ops);
        }
        if entry.system == System::ZooKeeperGuest {
            row = row
                .with("hold_us", round(Some(hold_us), 2))
                .with("bound_ms", round(bound_ms, 2))
                .with(
                    "max_wait_vs_bound",
                    round(bound_ms.map(|bound| max_wait_ms / bound), 2),
                );
        }
        rows.push(row);
    }
    Ok(rows)
}

/// One phase of `entry`: `clients` clients (over the host processes, for a
/// guest system) each `ops` acquisitions. Returns the whole phase and, for
/// host processes, each host's part.
async fn phase(
    env: &Env,
    entry: &mut Entry,
    clients: u64,
    ops: u64,
    counter: &str,
) -> anyhow::Result<(Phase, Vec<Phase>)> {
    let lock = lock_name(Workload::Hosts, entry.system, "")?;
    if entry.hosts.is_empty() {
        let specs = vec![LoopSpec::checked(lock, ops, counter); usize::try_from(clients)?];
        return Ok((run_phase(env, entry.system, specs).await?, Vec::new()));
    }
    let mark = env.zk_mark(entry.system);
    for host in &mut entry.hosts {
        host.start_phase(&lock, ops, counter).await?;
    }
    let mut all = Vec::new();
    let mut per_host = Vec::new();
    for host in &mut entry.hosts {
        let results = host.results().await?;
        all.extend(results.iter().cloned());
        per_host.push(Phase::of(results));
    }
    let mut whole = Phase::of(all);
    whole.zk = env.zk_since(mark);
    Ok((whole, per_host))
}

/// `hold`: the p99 of one guest's acquire, check and release on memory, alone.
async fn measure_hold(env: &Env) -> anyhow::Result<f64> {
    let file = "hosts-hold";
    check::reset(&env.dir().join(file))?;
    let lock = lock_name(Workload::Hosts, System::MemoryGuest, "hold")?;
    let spec = LoopSpec::checked(lock, HOLD_OPS, file);
    let phase = run_phase(env, System::MemoryGuest, vec![spec]).await?;
    let mut samples = Samples::default();
    samples.add_phase(&phase);
    Ok(samples.percentile_us(0.99).unwrap_or(0.0))
}

/// The fairness bound on ZooKeeper (see the module's documentation), in ms;
/// `None` without ZooKeeper.
async fn zk_bound_ms(env: &Env, hold_us: f64) -> anyhow::Result<Option<f64>> {
    let Ok(zk) = env.zk() else {
        return Ok(None);
    };
    let probe = ZkProbe::connect(&zk.address, WARDLOCK_ROOT).await;
    let (read_us, write_us) = round_trips(&probe.client).await?;
    let (hosts, clients) = (env.args.hosts as f64, env.args.clients as f64);
    let handover_us = 2.0 * write_us + 3.0 * read_us;
    let bound_us = if zk.options.local_handoff {
        let limits = zk.options.limits;
        let turns = (clients / f64::from(limits.max_handoffs + 1)).ceil();
        let turn_us = hold_us + limits.max_time.as_secs_f64() * 1e6 + handover_us;
        (turns * hosts + 1.0) * turn_us
    } else {
        hosts * clients * (hold_us + handover_us)
    };
    Ok(Some(bound_us / 1000.0))
}

/// The longest latency in `samples`, in ms.
fn max_ms(samples: &Samples) -> f64 {
    samples.latencies_ns.iter().max().copied().unwrap_or(0) as f64 / 1e6
}
