//! `wit-v3`: what `wardlock:lock@0.3.0` costs and gains (issue 50).
//!
//! - Cost: one guest loops on acquire+release of one lock through 0.2.2
//!   (`bench-guest loop`: a blocking `acquire`, then the handle's drop) and
//!   through 0.3.0 (`lockctl3 loop`: an awaited `acquire` in a WASI 0.3
//!   command, then the drop), interleaved round by round, on the in-memory
//!   engine and on ZooKeeper. `v3_vs_v2_p50` is 0.3's p50 ÷ 0.2's.
//! - Cancelled wait (ZooKeeper, etcd): how soon the next host holds when a
//!   wait queued before it is dropped as the holder releases, against the
//!   same release with no wait between (`cancelled_wait.rs`).
//! - Gain (ZooKeeper): one 0.3 instance acquires 64 free locks, all at once
//!   (`join_all`) and one after another, against one acquire of one free
//!   lock, interleaved; fresh names every round, so no acquire is served by
//!   the host's lock cache. `join_vs_one_p50` is the 64 at once ÷ one.
//!   The floor, in the same rounds: the same ZooKeeper requests for 64
//!   fresh locks at once and for one, sent straight from `zookeeper-client`
//!   over as many sessions as the host's pool (`fresh_floor.rs`); `floor_join_vs_one_p50` is what
//!   ZooKeeper alone allows of the ratio, and `join_vs_floor_p50` what the
//!   host adds to the 64 at once.

use std::sync::Arc;

use anyhow::{Context, bail};
use wardlock_host::LockBackend;
use wardlock_host::runner::Runner;
use wardlock_tests::{Guest, runner_with};

use super::cancelled_wait::release_to_next_grant;
use super::fresh_floor::fresh_locks_at_once;
use super::{Workload, progress};
use crate::env::{Env, EtcdEnv, WARDLOCK_ROOT, ZkEnv, guest_config};
use crate::report::{Row, round};
use crate::stats::{Samples, median};
use crate::systems::System;
use crate::systems::guest::{parse_loop, succeeded};
use crate::systems::zk_floor::FloorClient;
use wardlock_zookeeper::AUTO_SESSIONS;
use wardlock_zookeeper::LocalHandoff;

/// Rounds of each comparison.
const ROUNDS: usize = 10;
/// Locks of the concurrent acquire.
const MANY: u64 = 64;

/// Runs the workload.
///
/// # Errors
/// When a guest fails or prints something unexpected.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &system in systems {
        let backend: Arc<dyn LockBackend> = match system {
            System::MemoryGuest => Arc::new(env.memory.clone()),
            System::ZooKeeperGuest => Arc::new(env.zk()?.backend.clone()),
            System::EtcdGuest => env.etcd()?.backend.clone(),
            other => bail!("wit-v3 does not measure {}", other.name()),
        };
        let v2 = env.guest_runner(system)?;
        let v3 = runner_with(Guest::Lockctl3, guest_config(backend, env.dir()));
        rows.extend(cost(env, system, &v2, &v3).await?);
        if system == System::ZooKeeperGuest {
            rows.push(many_at_once(env, system, &v3).await?);
        }
        if system != System::MemoryGuest {
            rows.push(cancelled_wait(env, system).await?);
        }
    }
    Ok(rows)
}

/// 0.2.2 and 0.3.0 acquire+release loops, interleaved.
async fn cost(
    env: &Env,
    system: System,
    v2: &Arc<Runner>,
    v3: &Arc<Runner>,
) -> anyhow::Result<Vec<Row>> {
    let ops = (env.args.ops / ROUNDS as u64).max(1).to_string();
    let lock = format!("bench/wit-v3/{}", system.name());
    let (mut old, mut new) = (Samples::default(), Samples::default());
    for r in 0..ROUNDS {
        progress(&format!("wit-v3: {} cost, round {}", system.name(), r + 1));
        let args = [
            "loop".to_owned(),
            lock.clone(),
            "exclusive".to_owned(),
            ops.clone(),
        ];
        add(&mut old, &parse_loop(&v2.run(r, &args).await)?);
        let args = ["loop".to_owned(), lock.clone(), ops.clone()];
        add(&mut new, &parse_loop(&v3.run(r, &args).await)?);
    }
    let ratio = match (new.percentile_us(0.5), old.percentile_us(0.5)) {
        (Some(new), Some(old)) if old > 0.0 => Some(new / old),
        _ => None,
    };
    Ok(vec![
        Row::new(system, Workload::WitV3, 1, &old).variant("wit-0.2.2"),
        Row::new(system, Workload::WitV3, 1, &new)
            .variant("wit-0.3.0")
            .with("v3_vs_v2_p50", round(ratio, 3)),
    ])
}

/// Adds one loop's latencies and time.
fn add(samples: &mut Samples, result: &crate::systems::LoopResult) {
    samples.latencies_ns.extend(&result.latencies_ns);
    samples.ops += result.latencies_ns.len() as u64;
    let wall_ns = result.end_unix_ns.saturating_sub(result.start_unix_ns);
    samples.wall += std::time::Duration::from_nanos(u64::try_from(wall_ns).unwrap_or(u64::MAX));
}

/// 64 free locks at once and one after another, against one free lock,
/// each beside its floor.
async fn many_at_once(env: &Env, system: System, v3: &Arc<Runner>) -> anyhow::Result<Row> {
    let zk = env.zk()?;
    let mut floor = Vec::new();
    for _ in 0..AUTO_SESSIONS {
        let client = FloorClient::connect(&zk.address, zk.session_timeout).await?;
        floor.push(client.client().clone());
    }
    let (mut one, mut joined, mut sequential) = (Vec::new(), Vec::new(), Vec::new());
    let (mut floor_one, mut floor_joined) = (Vec::new(), Vec::new());
    for r in 0..ROUNDS {
        progress(&format!(
            "wit-v3: {} 64 at once, round {}",
            system.name(),
            r + 1
        ));
        let prefix = |what: &str| format!("bench/wit-v3-many/r{r}-{what}");
        one.push(timed(v3, &prefix("one"), 1, "seq").await?);
        joined.push(timed(v3, &prefix("join"), MANY, "join").await?);
        sequential.push(timed(v3, &prefix("seq"), MANY, "seq").await?);
        floor_one.push(fresh_locks_at_once(&floor, WARDLOCK_ROOT, &prefix("floor-one"), 1).await?);
        floor_joined
            .push(fresh_locks_at_once(&floor, WARDLOCK_ROOT, &prefix("floor-join"), MANY).await?);
    }
    let (one, joined, sequential) = (
        median(&mut one).context("no rounds")?,
        median(&mut joined).context("no rounds")?,
        median(&mut sequential).context("no rounds")?,
    );
    let (floor_one, floor_joined) = (
        median(&mut floor_one).context("no rounds")?,
        median(&mut floor_joined).context("no rounds")?,
    );
    let samples = Samples {
        ops: ROUNDS as u64 * MANY,
        ..Samples::default()
    };
    Ok(Row::new(system, Workload::WitV3, 1, &samples)
        .variant("64-at-once")
        .with("one_acquire_p50_ms", round(Some(one), 3))
        .with("join_64_p50_ms", round(Some(joined), 3))
        .with("sequential_64_p50_ms", round(Some(sequential), 3))
        .with("join_vs_one_p50", round(Some(joined / one), 2))
        .with(
            "sequential_vs_join_p50",
            round(Some(sequential / joined), 1),
        )
        .with("floor_one_p50_ms", round(Some(floor_one), 3))
        .with("floor_join_64_p50_ms", round(Some(floor_joined), 3))
        .with(
            "floor_join_vs_one_p50",
            round(Some(floor_joined / floor_one), 2),
        )
        .with("join_vs_floor_p50", round(Some(joined / floor_joined), 2)))
}

/// The cancelled-wait rows (`cancelled_wait.rs`): three hosts of `system`'s
/// engine, no lock cache.
async fn cancelled_wait(env: &Env, system: System) -> anyhow::Result<Row> {
    progress(&format!("wit-v3: {} cancelled wait", system.name()));
    let mut hosts: Vec<Arc<dyn LockBackend>> = Vec::new();
    for _ in 0..3 {
        hosts.push(match system {
            System::ZooKeeperGuest => {
                let zk = env.zk()?;
                let options = zk.options.uncached();
                Arc::new(ZkEnv::backend(&zk.address, zk.session_timeout, options).await?)
            }
            _ => {
                let etcd = env.etcd()?;
                let handoff = LocalHandoff::default();
                EtcdEnv::connect_with(&etcd.address, &env.args, handoff)
                    .await?
                    .backend
            }
        });
    }
    let hosts: [Arc<dyn LockBackend>; 3] = hosts
        .try_into()
        .map_err(|_| anyhow::anyhow!("three hosts"))?;
    let prefix = format!("bench/wit-v3-cancel/{}", system.name());
    let (mut plain, mut cancelled) = release_to_next_grant(&hosts, &prefix, ROUNDS).await?;
    let (plain, cancelled) = (
        median(&mut plain).context("no rounds")?,
        median(&mut cancelled).context("no rounds")?,
    );
    let samples = Samples {
        ops: 2 * ROUNDS as u64,
        ..Samples::default()
    };
    Ok(Row::new(system, Workload::WitV3, 1, &samples)
        .variant("cancelled-wait")
        .with("release_to_next_p50_ms", round(Some(plain), 3))
        .with("cancel_release_to_next_p50_ms", round(Some(cancelled), 3))
        .with("cancel_vs_plain_p50", round(Some(cancelled / plain), 2)))
}

/// `lockctl3 many-timed COUNT PREFIX HOW`'s time, in milliseconds.
async fn timed(v3: &Arc<Runner>, prefix: &str, count: u64, how: &str) -> anyhow::Result<f64> {
    let args = [
        "many-timed".to_owned(),
        count.to_string(),
        prefix.to_owned(),
        how.to_owned(),
    ];
    let report = v3.run(0, &args).await;
    succeeded(&report)?;
    let out = report.stdout_text();
    let ns: f64 = out
        .trim()
        .strip_prefix("elapsed_ns=")
        .with_context(|| format!("lockctl3 printed {out:?}"))?
        .parse()
        .with_context(|| format!("lockctl3 printed {out:?}"))?;
    Ok(ns / 1e6)
}
