//! `herd`: W waiters (W = `--clients`) queued behind one holder, each wanting
//! the lock once. Once every waiter waits (on ZooKeeper: has set its watch, by
//! the server's `wchs` count; in memory: is in the queue), the holder releases
//! and the lock is handed down the queue. Measured
//! over the W hand-offs: the time between consecutive releases (latency), the
//! server's watch notifications per hand-off (herd-free: exactly 1) and
//! requests per hand-off.

use std::time::Duration;

use anyhow::Context;
use wardlock_host::{LockBackend, Mode};

use super::{Workload, lock_name, progress};
use crate::check::Plan;
use crate::cpu;
use crate::env::Env;
use crate::report::Row;
use crate::stats::Samples;
use crate::systems::native::{Locker, SessionLocker};
use crate::systems::zk_floor::FloorClient;
use crate::systems::{LoopSpec, Prepared, System, unix_ns};

/// Owner of the holder's session.
const HOLDER: &str = "wardlock-bench herd holder";

/// Longest wait for every waiter to queue: a hang guard.
const QUEUE_GUARD: Duration = Duration::from_secs(120);

/// Runs the workload.
///
/// # Errors
/// When a client fails or the waiters never all queue.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &system in systems {
        progress(&format!(
            "herd: {} ({} waiters)",
            system.name(),
            env.args.clients
        ));
        let samples = match system {
            System::ZkFloor => {
                let zk = env.zk()?;
                let holder = FloorClient::connect(&zk.address, zk.session_timeout).await?;
                hand_offs(env, system, holder).await?
            }
            System::ZooKeeperNative | System::ZooKeeperGuest => {
                let session = env.zk()?.backend.open_session(HOLDER);
                hand_offs(env, system, SessionLocker::new(session)).await?
            }
            System::MemoryNative | System::MemoryGuest => {
                let session = env.memory.open_session(HOLDER);
                hand_offs(env, system, SessionLocker::new(session)).await?
            }
            System::Curator
            | System::CuratorShared
            | System::EtcdFloor
            | System::EtcdNative
            | System::EtcdGuest
            | System::PostgresFloor
            | System::PostgresNative
            | System::PostgresGuest => {
                anyhow::bail!("herd does not run on {}", system.name())
            }
        };
        rows.push(
            Row::new(system, Workload::Herd, env.args.clients, &samples)
                .with("waiters", env.args.clients),
        );
    }
    Ok(rows)
}

async fn hand_offs<H: Locker>(env: &Env, system: System, mut holder: H) -> anyhow::Result<Samples> {
    let waiters = env.args.clients;
    let lock = lock_name(Workload::Herd, system, "")?;
    let specs: Vec<LoopSpec> = (0..waiters)
        .map(|_| LoopSpec {
            lock: lock.clone(),
            plan: Plan::Exclusive,
            ops: 1,
            check: None,
            reopen: false,
        })
        .collect();
    // Prepare first: zk-floor creates the lock's parent there.
    let prepared = Prepared::new(env, system, specs).await?;
    holder.acquire(&lock, Mode::Exclusive).await?;
    let running = if system.uses_zookeeper() {
        let stats = &env.zk()?.stats;
        let watches = stats.watch_count()?;
        let running = prepared.start();
        stats
            .wait_watches(watches + waiters, QUEUE_GUARD)
            .await
            .context("waiters never all queued")?;
        running
    } else {
        let running = prepared.start();
        let queued = usize::try_from(waiters + 1).unwrap_or(usize::MAX);
        tokio::time::timeout(
            QUEUE_GUARD,
            env.memory.wait_for(&lock, |q| q.len() == queued),
        )
        .await
        .context("waiters never all queued")?;
        running
    };
    let mark = env.zk_mark(system);
    let cpu = cpu::process_cpu();
    let released = unix_ns();
    holder.release().await?;
    let mut phase = running.finish().await?;
    phase.zk = env.zk_since(mark);
    phase.cpu = cpu::since(cpu);
    let mut ends: Vec<u128> = phase.results.iter().map(|r| r.end_unix_ns).collect();
    ends.sort_unstable();
    let mut gaps = Vec::with_capacity(ends.len());
    let mut previous = released;
    for end in &ends {
        gaps.push(u64::try_from(end.saturating_sub(previous)).unwrap_or(u64::MAX));
        previous = *end;
    }
    let total = previous.saturating_sub(released);
    Ok(Samples {
        latencies_ns: gaps,
        wall: Duration::from_nanos(u64::try_from(total).unwrap_or(u64::MAX)),
        ops: waiters,
        violations: 0,
        zk: phase.zk,
        cpu: phase.cpu,
    })
}
