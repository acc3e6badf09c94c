//! `release-on-death`: a guest holding a lock traps; how soon does the next
//! waiter hold it? Each of [`DEATHS`] rounds: the host holds a gate lock; a
//! `bench-guest trap-holding L GATE` instance takes `L`, queues on the gate; a
//! waiter queues on `L` (on ZooKeeper: through another backend, i.e. another
//! host's session); the host opens the gate; the guest stamps the wall clock
//! and traps. Latency: from that stamp until the waiter's `acquire` returns.
//!
//! On ZooKeeper it is compared with the session timeout (what a dead holder
//! would cost if the lock were left to session expiry) and with two round
//! trips (a `delete` plus a `get_children`, measured in the same run).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use wardlock_host::runner::Outcome;
use wardlock_host::{LockBackend, Mode};
use zookeeper_client::{Acls, Client, CreateMode};

use super::{Workload, lock_name, progress};
use crate::env::{Env, WARDLOCK_ROOT, ZkEnv};
use crate::report::Row;
use crate::stats::{Samples, elapsed_ns, p50_us};
use crate::systems::{System, guest, unix_ns};
use wardlock_tests::probe::{HandoffProbe, MemoryProbe, Probe, ZkProbe};

/// Trapping holders per system.
pub(super) const DEATHS: u64 = 20;

/// Round trips sampled to measure the server's latency.
const RTT_SAMPLES: usize = 50;

/// Runs the workload.
///
/// # Errors
/// When a guest does not trap as planned or the waiter is not granted.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &system in systems {
        progress(&format!(
            "release-on-death: {} ({DEATHS} traps)",
            system.name()
        ));
        let row = match system {
            System::ZooKeeperGuest => {
                let zk = env.zk()?;
                let other_host: Arc<dyn LockBackend> =
                    Arc::new(ZkEnv::backend(&zk.address, zk.session_timeout, zk.options).await?);
                let probe = ZkProbe::connect(&zk.address, WARDLOCK_ROOT).await;
                // With hand-off the guest queues for the gate behind the host's
                // own holder in the host's task, not on a node of its own.
                let local = HandoffProbe(zk.backend.clone());
                let gate_probe: &dyn Probe = if zk.options.local_handoff {
                    &local
                } else {
                    &probe
                };
                let probes = Probes {
                    gate: gate_probe,
                    lock: &probe,
                };
                let samples = deaths(env, system, &zk.backend, other_host.as_ref(), probes).await?;
                let (read, write) = round_trips(&probe.client).await?;
                let p50 = samples.percentile_us(0.5).unwrap_or(f64::NAN);
                let two_rtts = read + write;
                let timeout_us = zk.session_timeout.as_secs_f64() * 1e6;
                Row::new(system, Workload::ReleaseOnDeath, 1, &samples)
                    .with("session_timeout_ms", zk.session_timeout.as_millis() as u64)
                    .with("timeout_vs_p50", (timeout_us / p50).round())
                    .with("read_rtt_us", (read * 10.0).round() / 10.0)
                    .with("write_rtt_us", (write * 10.0).round() / 10.0)
                    .with("p50_vs_two_rtts", (p50 / two_rtts * 100.0).round() / 100.0)
            }
            _ => {
                let probe = MemoryProbe(env.memory.clone());
                let probes = Probes {
                    gate: &probe,
                    lock: &probe,
                };
                let samples = deaths(env, system, &env.memory, &env.memory, probes).await?;
                Row::new(system, Workload::ReleaseOnDeath, 1, &samples)
            }
        };
        rows.push(row);
    }
    Ok(rows)
}

/// Who watches the gate (the host's own lock, which the guest queues on)
/// and the lock (which the other host's waiter queues on).
#[derive(Clone, Copy)]
struct Probes<'a> {
    gate: &'a dyn Probe,
    lock: &'a dyn Probe,
}

/// [`DEATHS`] rounds of trap and hand-over.
async fn deaths(
    env: &Env,
    system: System,
    host: &dyn LockBackend,
    other_host: &dyn LockBackend,
    probes: Probes<'_>,
) -> anyhow::Result<Samples> {
    let runner = env.guest_runner(system)?;
    let mut samples = Samples::default();
    for round in 0..DEATHS {
        let lock = lock_name(Workload::ReleaseOnDeath, system, &format!("lock{round}"))?;
        let gate = lock_name(Workload::ReleaseOnDeath, system, &format!("gate{round}"))?;
        let gate_session = host.open_session("wardlock-bench gate");
        let gate_grant = gate_session.acquire(&gate, Mode::Exclusive, None).await?;
        let guest = {
            let runner = runner.clone();
            let args = vec![
                "trap-holding".to_owned(),
                lock.to_string(),
                gate.to_string(),
            ];
            let instance = usize::try_from(round).unwrap_or(usize::MAX);
            tokio::spawn(async move { runner.run(instance, &args).await })
        };
        probes.gate.wait_len(gate.as_str(), 2).await;
        let waiter_session = other_host.open_session("wardlock-bench waiter");
        let waiter = async {
            let grant = waiter_session
                .acquire(&lock, Mode::Exclusive, Some(Duration::from_secs(60)))
                .await;
            (grant, unix_ns())
        };
        let open_gate = async {
            probes.lock.wait_len(lock.as_str(), 2).await;
            gate_session.release(gate_grant.id)
        };
        let ((grant, granted_at), opened) = tokio::join!(waiter, open_gate);
        opened?;
        let grant = grant.context("the waiter was not granted")?;
        let report = guest.await.context("guest task panicked")?;
        if !matches!(report.outcome, Outcome::Trap(_)) {
            bail!("the holder ended with {} instead of a trap", report.outcome);
        }
        let trapped_at = guest::parse_trap_time(&report)?;
        if granted_at < trapped_at {
            bail!("granted before the holder trapped");
        }
        samples
            .latencies_ns
            .push(u64::try_from(granted_at - trapped_at).unwrap_or(u64::MAX));
        samples.ops += 1;
        waiter_session.release(grant.id)?;
    }
    Ok(samples)
}

/// p50 of a read (`exists /`) and of a write (`set_data`) round trip, in µs.
pub(super) async fn round_trips(client: &Client) -> anyhow::Result<(f64, f64)> {
    let scratch = format!("{WARDLOCK_ROOT}-rtt");
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    client.create(&scratch, &[], &options).await?;
    let mut reads = Vec::with_capacity(RTT_SAMPLES);
    let mut writes = Vec::with_capacity(RTT_SAMPLES);
    for _ in 0..RTT_SAMPLES {
        let started = Instant::now();
        client.check_stat("/").await?;
        reads.push(elapsed_ns(started));
        let started = Instant::now();
        client.set_data(&scratch, b"x", None).await?;
        writes.push(elapsed_ns(started));
    }
    client.delete(&scratch, None).await?;
    Ok((p50_us(&mut reads), p50_us(&mut writes)))
}
