//! `fairness`: how long a waiter on another host waits behind K busy clients
//! of one host that hand the lock among themselves (host-local hand-off).
//!
//! K clients of this host's backend loop on one exclusive lock, each holding it
//! [`HOLD`] (a busy guest doing work). Meanwhile a client of a second backend
//! (another host: its own ZooKeeper session) takes the same lock [`WAITS`]
//! times, pausing [`PAUSE`] between its turns. Latency: each of its acquires.
//!
//! The documented bound (README, "Host-local hand-off"): a remote waiter waits
//! for at most the current holder, the hand-off bound (`max_handoffs` grants or
//! `max_time` after the host learns of the waiter, whichever comes first) and
//! the hand-over's round trips: its own queueing (a write: `create`, with the
//! listing pipelined, then a read: the data watch on its predecessor), the
//! holding host's listing when its watch fires (a read), that host's release
//! (a write: `delete`) and the waiter's listing after the notice (a read). The
//! row reports `bound_us` = `HOLD` + `max_time` + two write and three read round
//! trips measured in the same run, and `p50_vs_bound`, `p99_vs_bound`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wardlock_host::{LockBackend, Mode};

use super::release_on_death::round_trips;
use super::{Workload, lock_name, progress};
use crate::env::{Env, ZkEnv};
use crate::report::Row;
use crate::stats::Samples;
use crate::systems::System;
use wardlock_tests::probe::ZkProbe;

/// How long each busy local client holds the lock per grant.
const HOLD: Duration = Duration::from_millis(2);
/// The remote client's acquisitions.
const WAITS: u64 = 30;
/// The remote client's pause between its turns (the local clients run alone).
const PAUSE: Duration = Duration::from_millis(20);
/// A hang guard for each acquire, not a measurement.
const ACQUIRE_LIMIT: Duration = Duration::from_secs(60);

/// Runs the workload (on `zookeeper-native` only; skipped without hand-off).
///
/// # Errors
/// When a client is not granted or ZooKeeper fails.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let zk = env.zk()?;
    if !zk.options.local_handoff {
        progress("fairness: skipped (measures host-local hand-off: drop --no-local-handoff)");
        return Ok(Vec::new());
    }
    let mut rows = Vec::new();
    for &system in systems {
        let clients = env.args.clients;
        progress(&format!(
            "fairness: {} ({clients} busy local clients, {WAITS} remote acquisitions)",
            system.name()
        ));
        let lock = lock_name(Workload::Fairness, system, "")?;
        let remote = ZkEnv::backend(&zk.address, zk.session_timeout, zk.options).await?;
        let stop = Arc::new(AtomicBool::new(false));
        let local_grants = Arc::new(AtomicU64::new(0));
        let mut busy = Vec::new();
        for client in 0..clients {
            let (backend, lock) = (zk.backend.clone(), lock.clone());
            let (stop, local_grants) = (stop.clone(), local_grants.clone());
            busy.push(tokio::spawn(async move {
                let session = backend.open_session(&format!("wardlock-bench busy {client}"));
                while !stop.load(Ordering::SeqCst) {
                    let grant = session
                        .acquire(&lock, Mode::Exclusive, Some(ACQUIRE_LIMIT))
                        .await?;
                    local_grants.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(HOLD).await;
                    session.release(grant.id)?;
                }
                anyhow::Ok(())
            }));
        }
        let session = remote.open_session("wardlock-bench remote waiter");
        let mut samples = Samples::default();
        let mut during = Vec::new();
        let started = Instant::now();
        for _ in 0..WAITS {
            tokio::time::sleep(PAUSE).await;
            let before = local_grants.load(Ordering::SeqCst);
            let asked = Instant::now();
            let grant = session
                .acquire(&lock, Mode::Exclusive, Some(ACQUIRE_LIMIT))
                .await?;
            samples
                .latencies_ns
                .push(u64::try_from(asked.elapsed().as_nanos()).unwrap_or(u64::MAX));
            samples.ops += 1;
            during.push(local_grants.load(Ordering::SeqCst) - before);
            session.release(grant.id)?;
        }
        samples.wall = started.elapsed();
        stop.store(true, Ordering::SeqCst);
        for client in busy {
            client.await??;
        }
        drop(session);
        let probe = ZkProbe::connect(&zk.address, crate::env::WARDLOCK_ROOT).await;
        let (read_us, write_us) = round_trips(&probe.client).await?;
        let limits = zk.options.limits;
        let bound_us =
            (HOLD + limits.max_time).as_secs_f64() * 1e6 + 3.0 * read_us + 2.0 * write_us;
        let p50 = samples.percentile_us(0.5).unwrap_or(f64::NAN);
        let p99 = samples.percentile_us(0.99).unwrap_or(f64::NAN);
        during.sort_unstable();
        let most_local = during.last().copied().unwrap_or(0);
        rows.push(
            Row::new(system, Workload::Fairness, clients, &samples)
                .with("hold_us", HOLD.as_micros() as u64)
                .with("max_handoffs", u64::from(limits.max_handoffs))
                .with("max_time_us", limits.max_time.as_micros() as u64)
                .with("read_rtt_us", (read_us * 10.0).round() / 10.0)
                .with("write_rtt_us", (write_us * 10.0).round() / 10.0)
                .with("bound_us", bound_us.round())
                .with("p50_vs_bound", (p50 / bound_us * 100.0).round() / 100.0)
                .with("p99_vs_bound", (p99 / bound_us * 100.0).round() / 100.0)
                .with("most_local_grants_while_waiting", most_local)
                .with("local_grants", local_grants.load(Ordering::SeqCst)),
        );
    }
    Ok(rows)
}
