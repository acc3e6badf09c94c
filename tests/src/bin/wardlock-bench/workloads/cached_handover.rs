//! `cached-handover` (issue 39): what lock caching costs a waiter on another
//! host. Two hosts (two backends: two ZooKeeper sessions or etcd leases, each
//! with its own hand-off, both configured as the run's) take turns on one
//! exclusive lock: the host that took it last released it [`SETTLE`] ago and,
//! with caching on, still keeps its node; the other host acquires it
//! (measured), releases it and caches it in turn; [`SAMPLES`] turns after
//! [`WARM_UP`] unrecorded ones. Before each turn the lock's queue is read (not
//! timed): `cached_before` counts the turns that found the other host's node
//! there ([`ROUNDS`] rounds of [`SAMPLES`] turns). For `wardlock-native` the latency is the `acquire` call; for
//! `wardlock-guest` (and `etcd-guest`) a `bench-guest loop L x 1` instance on
//! the acquiring host times its acquire+release from inside.
//!
//! References measured in the same turns, interleaved:
//!
//! - the floor's rows (`zk-floor`, `etcd-floor`) are the raw recipe's
//!   hand-over: a raw client holds the lock, a second one queues behind it
//!   (its watch set), the holder deletes its node: from the `delete` being
//!   sent to the waiter's `acquire` returning (the delete's commit, one watch
//!   notification, the waiter's listing: "one notification + one round
//!   trip");
//! - `free_p50_us` / `free_p99_us` on wardlock's rows: an `acquire` of a lock
//!   nobody holds or caches, by a third host that does not cache (what the
//!   waiter would pay had the other host not kept its node);
//! - `read_rtt_us` / `write_rtt_us`: the p50 of 50 reads (`exists` /
//!   range `get`) and 50 writes (`set_data` / `put`) on a raw client.
//!
//! Every row adds `max_us` and `turns_over_20ms` (stalls: a turn takes a few
//! milliseconds). Derived: `extra_p50_us` / `extra_p99_us` (the row's percentile minus the
//! free acquire's: what the cache added), `p99_vs_handover` and
//! `extra_p99_vs_handover` (÷ the floor's hand-over p99), over all
//! [`ROUNDS`] × [`SAMPLES`] turns; and per round of [`SAMPLES`] turns
//! `round_extra_p99_vs_handover` with its median
//! `extra_p99_vs_handover_round_median` (the target's figure).
//!
//! On ZooKeeper each of wardlock's lock nodes here gets a persistent child
//! `keep` (not a lock node: the recipe ignores it) for the workload's length,
//! so the test server (which reaps empty containers every 100 ms) never reaps
//! a lock's parent between turns: a free acquire would otherwise re-create it,
//! two more writes that a server with the default 60 s interval rarely asks
//! for. The floor's lock parents are persistent anyway.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use etcd_client::Client as EtcdClient;
use wardlock_etcd::EtcdBackend;
use wardlock_host::runner::Runner;
use wardlock_host::{LockBackend, LockName, LockSession, Mode};
use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend};
use zookeeper_client::{Acls, CreateMode, Error as ZkError};

use super::release_on_death::round_trips;
use super::{Workload, lock_name, progress};
use crate::check::Plan;
use crate::env::{Env, EtcdEnv, WARDLOCK_ROOT, ZkEnv, guest_runner};
use crate::report::{Row, round};
use crate::stats::{Samples, elapsed_ns, median, p50_us, percentile};
use crate::systems::etcd_floor::EtcdFloorClient;
use crate::systems::native::Locker;
use crate::systems::zk_floor::FloorClient;
use crate::systems::{LoopSpec, System, guest};
use serde_json::Value;
use wardlock_tests::probe::ZkProbe;

/// Measured turns per system in a round.
pub(super) const SAMPLES: u64 = 100;
/// Rounds of [`SAMPLES`] turns, one after another (the p99 of 100 turns on a
/// noisy 2-core machine is decided by one or two turns: the verdict takes
/// the median round).
const ROUNDS: u64 = 3;
/// Unrecorded turns first.
const WARM_UP: u64 = 10;
/// How long after the last release a turn starts (the releasing host has
/// cached its node and watches the queue long before).
const SETTLE: Duration = Duration::from_millis(20);
/// A hang guard for each acquire, not a measurement.
const ACQUIRE_LIMIT: Duration = Duration::from_secs(60);
/// Round trips sampled for `read_rtt_us` and `write_rtt_us`.
const RTT_SAMPLES: usize = 50;
/// Turns slower than this are counted (`turns_over_20ms`): a hand-over here
/// takes a few milliseconds, so these are stalls.
const SLOW_NS: u64 = 20_000_000;

/// A host: a wardlock backend of one engine.
#[derive(Clone)]
enum Host {
    Zk(ZooKeeperBackend),
    Etcd(Arc<EtcdBackend>),
}

impl Host {
    fn backend(&self) -> Arc<dyn LockBackend> {
        match self {
            Host::Zk(backend) => Arc::new(backend.clone()),
            Host::Etcd(backend) => backend.clone(),
        }
    }

    /// The lock nodes (keys) queued for `lock` now, any host's.
    async fn queued(&self, lock: &LockName) -> anyhow::Result<usize> {
        Ok(match self {
            Host::Zk(backend) => backend
                .queue(lock)
                .await?
                .iter()
                .filter(|node| node.mode.is_some())
                .count(),
            Host::Etcd(backend) => backend.queue(lock).await?.len(),
        })
    }
}

/// Two hosts taking turns on one lock, for a wardlock system.
struct Turns {
    system: System,
    lock: LockName,
    hosts: [Host; 2],
    sessions: [Box<dyn LockSession>; 2],
    /// Guest systems: a runner on each host.
    runners: Option<[Arc<Runner>; 2]>,
    /// The host that took the lock last (and caches it).
    last: usize,
    primed: bool,
    samples: Samples,
    cached_before: u64,
}

impl Turns {
    /// One turn: the host that did not take the lock last takes it.
    async fn turn(&mut self, record: bool) -> anyhow::Result<()> {
        if !self.primed {
            let grant = self.sessions[self.last]
                .acquire(&self.lock, Mode::Exclusive, Some(ACQUIRE_LIMIT))
                .await?;
            self.sessions[self.last].release(grant.id)?;
            self.primed = true;
        }
        tokio::time::sleep(SETTLE).await;
        let other = 1 - self.last;
        let cached = self.hosts[self.last].queued(&self.lock).await? > 0;
        let ns = match &self.runners {
            None => {
                let asked = Instant::now();
                let grant = self.sessions[other]
                    .acquire(&self.lock, Mode::Exclusive, Some(ACQUIRE_LIMIT))
                    .await?;
                let ns = elapsed_ns(asked);
                self.sessions[other].release(grant.id)?;
                ns
            }
            Some(runners) => {
                let spec = LoopSpec {
                    lock: self.lock.clone(),
                    plan: Plan::Exclusive,
                    ops: 1,
                    check: None,
                    reopen: false,
                };
                let results = guest::run_all(&runners[other], vec![spec]).await?;
                results
                    .first()
                    .and_then(|r| r.latencies_ns.first().copied())
                    .context("the guest timed no acquire")?
            }
        };
        self.last = other;
        if record {
            self.samples.latencies_ns.push(ns);
            self.samples.ops += 1;
            self.cached_before += u64::from(cached);
        }
        Ok(())
    }
}

/// A host that does not cache, acquiring a lock nobody holds: the reference.
struct Free {
    host: Host,
    session: Box<dyn LockSession>,
    lock: LockName,
    samples: Samples,
}

impl Free {
    async fn turn(&mut self, record: bool) -> anyhow::Result<()> {
        tokio::time::sleep(SETTLE).await;
        // The last release's delete was sent, not awaited: wait for it.
        let mut polls = 0;
        while self.host.queued(&self.lock).await? > 0 {
            polls += 1;
            if polls > 100 {
                bail!("{} stays queued: the free lock is not free", self.lock);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let asked = Instant::now();
        let grant = self
            .session
            .acquire(&self.lock, Mode::Exclusive, Some(ACQUIRE_LIMIT))
            .await?;
        let ns = elapsed_ns(asked);
        self.session.release(grant.id)?;
        if record {
            self.samples.latencies_ns.push(ns);
            self.samples.ops += 1;
        }
        Ok(())
    }
}

/// Two raw clients handing the lock over: the floor's hand-over.
struct Handover<L: Locker> {
    system: System,
    lock: LockName,
    /// The next holder and the next waiter.
    clients: Option<(L, L)>,
    samples: Samples,
}

impl<L: Locker> Handover<L> {
    /// `system`'s raw hand-over on `lock` between two clients of its own.
    fn new(system: System, lock: LockName, holder: L, waiter: L) -> Self {
        Handover {
            system,
            lock,
            clients: Some((holder, waiter)),
            samples: Samples::default(),
        }
    }

    async fn turn(&mut self, record: bool) -> anyhow::Result<()> {
        let (mut holder, mut waiter) = self.clients.take().context("no floor clients")?;
        holder.acquire(&self.lock, Mode::Exclusive).await?;
        let lock = self.lock.clone();
        let queued = tokio::spawn(async move {
            waiter.acquire(&lock, Mode::Exclusive).await?;
            anyhow::Ok((waiter, Instant::now()))
        });
        tokio::time::sleep(SETTLE).await;
        if queued.is_finished() {
            bail!(
                "{}: the waiter was granted while the holder held",
                self.system.name()
            );
        }
        let released = Instant::now();
        holder.release().await?;
        let (mut waiter, granted) = queued.await.context("the waiter panicked")??;
        let ns = u64::try_from(granted.saturating_duration_since(released).as_nanos())
            .unwrap_or(u64::MAX);
        waiter.release().await?;
        // The waiter holds first next time.
        self.clients = Some((waiter, holder));
        if record {
            self.samples.latencies_ns.push(ns);
            self.samples.ops += 1;
        }
        Ok(())
    }
}

/// Everything measured on one engine.
#[derive(Default)]
struct Engine {
    turns: Vec<Turns>,
    free: Option<Free>,
    zk_floor: Option<Handover<FloorClient>>,
    etcd_floor: Option<Handover<EtcdFloorClient>>,
    /// p50 read and write round trips, µs.
    rtts: Option<(f64, f64)>,
    /// ZooKeeper: the `keep` nodes made, and the client that made them.
    kept: Vec<String>,
    keeper: Option<ZkProbe>,
}

impl Engine {
    /// Turn `number` of every system of the engine, in an order that
    /// rotates from turn to turn, so no system always comes first after the
    /// other engine's writes (one disk serves both servers here).
    async fn turn(&mut self, number: u64, record: bool) -> anyhow::Result<()> {
        let floors = usize::from(self.zk_floor.is_some()) + usize::from(self.etcd_floor.is_some());
        let count = self.turns.len() + floors + usize::from(self.free.is_some());
        let first = usize::try_from(number).unwrap_or(0) % count.max(1);
        for slot in (0..count).map(|i| (first + i) % count) {
            if let Some(turns) = self.turns.get_mut(slot) {
                turns.turn(record).await?;
            } else if slot < self.turns.len() + floors {
                if let Some(floor) = &mut self.zk_floor {
                    floor.turn(record).await?;
                }
                if let Some(floor) = &mut self.etcd_floor {
                    floor.turn(record).await?;
                }
            } else if let Some(free) = &mut self.free {
                free.turn(record).await?;
            }
        }
        Ok(())
    }

    /// Gives `lock`'s parent (wardlock's layout under [`WARDLOCK_ROOT`]) a
    /// persistent child, so it is never reaped as an empty container.
    async fn keep(&mut self, lock: &LockName) -> anyhow::Result<()> {
        let Some(keeper) = &self.keeper else {
            return Ok(());
        };
        let parent = format!("{WARDLOCK_ROOT}/{lock}");
        let container = CreateMode::Container.with_acls(Acls::anyone_all());
        keeper.client.mkdir(&parent, &container).await?;
        let path = format!("{parent}/keep");
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        match keeper.client.create(&path, &[], &persistent).await {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(error) => return Err(error).with_context(|| format!("creating {path}")),
        }
        self.kept.push(path);
        Ok(())
    }

    /// Deletes the `keep` nodes.
    async fn unkeep(&mut self) -> anyhow::Result<()> {
        if let Some(keeper) = &self.keeper {
            for path in self.kept.drain(..) {
                match keeper.client.delete(&path, None).await {
                    Ok(()) | Err(ZkError::NoNode) => {}
                    Err(error) => return Err(error).with_context(|| format!("deleting {path}")),
                }
            }
        }
        Ok(())
    }

    /// The floor's hand-over samples, if measured.
    fn handover(&self) -> Option<(System, &Samples)> {
        self.zk_floor
            .as_ref()
            .map(|f| (f.system, &f.samples))
            .or_else(|| self.etcd_floor.as_ref().map(|f| (f.system, &f.samples)))
    }
}

/// Runs the workload.
///
/// # Errors
/// When a host cannot connect or a client is not granted.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let mut engines = Vec::new();
    let zk_systems: Vec<System> = systems
        .iter()
        .copied()
        .filter(|s| s.uses_zookeeper())
        .collect();
    if !zk_systems.is_empty() {
        engines.push(zk_engine(env, &zk_systems).await?);
    }
    let etcd_systems: Vec<System> = systems.iter().copied().filter(|s| s.uses_etcd()).collect();
    if !etcd_systems.is_empty() {
        engines.push(etcd_engine(env, &etcd_systems).await?);
    }
    for turn in 0..WARM_UP + ROUNDS * SAMPLES {
        if turn == 0 || (turn + 1) % 50 == 0 {
            progress(&format!(
                "cached-handover: turn {}/{} ({WARM_UP} not recorded)",
                turn + 1,
                WARM_UP + ROUNDS * SAMPLES
            ));
        }
        let count = engines.len();
        let first = usize::try_from(turn).unwrap_or(0) % count.max(1);
        for i in 0..count {
            engines[(first + i) % count]
                .turn(turn, turn >= WARM_UP)
                .await?;
        }
    }
    if let Ok(zk) = env.zk()
        && let Some(engine) = engines.first_mut().filter(|_| !zk_systems.is_empty())
    {
        engine.unkeep().await?;
        let probe = ZkProbe::connect(&zk.address, WARDLOCK_ROOT).await;
        engine.rtts = Some(round_trips(&probe.client).await?);
    }
    if let Ok(etcd) = env.etcd()
        && let Some(engine) = engines.last_mut().filter(|_| !etcd_systems.is_empty())
    {
        engine.rtts = Some(etcd_round_trips(&etcd.address).await?);
    }
    let mut rows = Vec::new();
    for engine in &engines {
        rows.extend(engine_rows(engine));
    }
    Ok(rows)
}

/// The rows of one engine: the floor's hand-over first, then wardlock's.
fn engine_rows(engine: &Engine) -> Vec<Row> {
    let rtt = |row: Row, samples: &Samples| {
        let slow = samples
            .latencies_ns
            .iter()
            .filter(|&&ns| ns > SLOW_NS)
            .count();
        let max = samples
            .latencies_ns
            .iter()
            .max()
            .map(|&ns| ns as f64 / 1000.0);
        let row = row
            .with("max_us", round(max, 2))
            .with("turns_over_20ms", slow);
        match engine.rtts {
            Some((read, write)) => row
                .with("read_rtt_us", round(Some(read), 1))
                .with("write_rtt_us", round(Some(write), 1)),
            None => row,
        }
    };
    let mut rows = Vec::new();
    let handover = engine.handover();
    if let Some((system, samples)) = handover {
        let row = Row::new(system, Workload::CachedHandover, 2, samples);
        rows.push(rtt(row, samples));
    }
    let p = |samples: &Samples, q: f64| samples.percentile_us(q);
    let handover_p50 = handover.and_then(|(_, s)| p(s, 0.5));
    let handover_p99 = handover.and_then(|(_, s)| p(s, 0.99));
    let free_p50 = engine.free.as_ref().and_then(|f| p(&f.samples, 0.5));
    let free_p99 = engine.free.as_ref().and_then(|f| p(&f.samples, 0.99));
    for turns in &engine.turns {
        let p50 = p(&turns.samples, 0.5);
        let p99 = p(&turns.samples, 0.99);
        let minus = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        let over = |a: Option<f64>, b: Option<f64>| {
            let (a, b) = (a?, b?);
            (b > 0.0).then(|| a / b)
        };
        let extra_p50 = minus(p50, free_p50);
        let extra_p99 = minus(p99, free_p99);
        let per_round: Vec<f64> = (0..ROUNDS)
            .filter_map(|r| {
                let handover = round_p99(&handover?.1.latencies_ns, r)?;
                let extra = round_p99(&turns.samples.latencies_ns, r)?
                    - round_p99(&engine.free.as_ref()?.samples.latencies_ns, r)?;
                (handover > 0.0).then(|| extra / handover)
            })
            .collect();
        let rounds: Vec<Value> = per_round.iter().map(|&v| round(Some(v), 3)).collect();
        let round_median = median(&mut per_round.clone());
        let row = Row::new(turns.system, Workload::CachedHandover, 2, &turns.samples)
            .with("cached_before", turns.cached_before)
            .with("round_extra_p99_vs_handover", rounds)
            .with("extra_p99_vs_handover_round_median", round(round_median, 3))
            .with("free_p50_us", round(free_p50, 2))
            .with("free_p99_us", round(free_p99, 2))
            .with("extra_p50_us", round(extra_p50, 2))
            .with("extra_p99_us", round(extra_p99, 2))
            .with("handover_p50_us", round(handover_p50, 2))
            .with("handover_p99_us", round(handover_p99, 2))
            .with("p99_vs_handover", round(over(p99, handover_p99), 3))
            .with(
                "extra_p99_vs_handover",
                round(over(extra_p99, handover_p99), 3),
            );
        rows.push(rtt(row, &turns.samples));
    }
    rows
}

/// The p99 in µs of round `r`'s [`SAMPLES`] latencies (every system records
/// one per turn, so round `r` is the `r`-th run of [`SAMPLES`]).
fn round_p99(latencies_ns: &[u64], r: u64) -> Option<f64> {
    let size = usize::try_from(SAMPLES).ok()?;
    let start = usize::try_from(r).ok()? * size;
    let mut round = latencies_ns.get(start..start + size)?.to_vec();
    round.sort_unstable();
    percentile(&round, 0.99).map(|ns| ns as f64 / 1000.0)
}

/// The ZooKeeper side: a second host like the run's, a third that does not
/// cache, and two raw clients.
async fn zk_engine(env: &Env, systems: &[System]) -> anyhow::Result<Engine> {
    let zk = env.zk()?;
    let this = Host::Zk(zk.backend.clone());
    let other = Host::Zk(ZkEnv::backend(&zk.address, zk.session_timeout, zk.options).await?);
    let mut engine = Engine::default();
    for &system in systems {
        match system {
            System::ZkFloor => {
                let lock = lock_name(Workload::CachedHandover, system, "")?;
                let holder = FloorClient::connect(&zk.address, zk.session_timeout).await?;
                holder.prepare(&lock).await?;
                let waiter = FloorClient::connect(&zk.address, zk.session_timeout).await?;
                engine.zk_floor = Some(Handover::new(system, lock, holder, waiter));
            }
            System::ZooKeeperNative | System::ZooKeeperGuest => {
                engine
                    .turns
                    .push(turns(env, system, [this.clone(), other.clone()])?);
            }
            _ => {}
        }
    }
    if !engine.turns.is_empty() {
        let uncached = zk.options.uncached();
        let backend = ZkEnv::backend(&zk.address, zk.session_timeout, uncached).await?;
        engine.free = Some(free(Host::Zk(backend))?);
    }
    engine.keeper = Some(ZkProbe::connect(&zk.address, WARDLOCK_ROOT).await);
    let locks: Vec<LockName> = engine
        .turns
        .iter()
        .map(|t| t.lock.clone())
        .chain(engine.free.as_ref().map(|f| f.lock.clone()))
        .collect();
    for lock in &locks {
        engine.keep(lock).await?;
    }
    Ok(engine)
}

/// The etcd side, as [`zk_engine`].
async fn etcd_engine(env: &Env, systems: &[System]) -> anyhow::Result<Engine> {
    let etcd = env.etcd()?;
    let this = Host::Etcd(etcd.backend.clone());
    let second = EtcdEnv::connect_with(&etcd.address, &env.args, etcd.handoff).await?;
    let other = Host::Etcd(second.backend);
    let mut engine = Engine::default();
    for &system in systems {
        match system {
            System::EtcdFloor => {
                let lock = lock_name(Workload::CachedHandover, system, "")?;
                let holder = EtcdFloorClient::connect(&etcd.address, etcd.ttl_secs).await?;
                let waiter = EtcdFloorClient::connect(&etcd.address, etcd.ttl_secs).await?;
                engine.etcd_floor = Some(Handover::new(system, lock, holder, waiter));
            }
            System::EtcdNative | System::EtcdGuest => {
                engine
                    .turns
                    .push(turns(env, system, [this.clone(), other.clone()])?);
            }
            _ => {}
        }
    }
    if !engine.turns.is_empty() {
        let uncached = LocalHandoff {
            linger: Duration::ZERO,
            ..etcd.handoff
        };
        let third = EtcdEnv::connect_with(&etcd.address, &env.args, uncached).await?;
        engine.free = Some(free(Host::Etcd(third.backend))?);
    }
    Ok(engine)
}

/// The turns of `system` between `hosts` (the run's host first).
fn turns(env: &Env, system: System, hosts: [Host; 2]) -> anyhow::Result<Turns> {
    let sessions = [0, 1].map(|i| {
        hosts[i]
            .backend()
            .open_session(&format!("wardlock-bench cached-handover host {i}"))
    });
    let runners = match system {
        System::ZooKeeperGuest | System::EtcdGuest => Some([
            env.guest_runner(system)?,
            guest_runner(hosts[1].backend(), env.dir()),
        ]),
        _ => None,
    };
    Ok(Turns {
        system,
        lock: lock_name(Workload::CachedHandover, system, "")?,
        hosts,
        sessions,
        runners,
        last: 0,
        primed: false,
        samples: Samples::default(),
        cached_before: 0,
    })
}

/// The reference of `host` (a host that does not cache).
fn free(host: Host) -> anyhow::Result<Free> {
    let session = host
        .backend()
        .open_session("wardlock-bench cached-handover free");
    Ok(Free {
        host,
        session,
        lock: LockName::new("bench/cached-handover/free")?,
        samples: Samples::default(),
    })
}

/// The p50 of [`RTT_SAMPLES`] range reads and puts of one key on a raw etcd
/// client, µs.
async fn etcd_round_trips(address: &str) -> anyhow::Result<(f64, f64)> {
    let endpoints: Vec<String> = address.split(',').map(|a| format!("http://{a}")).collect();
    let mut client = EtcdClient::connect(endpoints, None)
        .await
        .with_context(|| format!("cannot connect to etcd at {address}"))?;
    let key = format!("{WARDLOCK_ROOT}-rtt");
    client.put(key.as_str(), "x", None).await?;
    let mut reads = Vec::with_capacity(RTT_SAMPLES);
    let mut writes = Vec::with_capacity(RTT_SAMPLES);
    for _ in 0..RTT_SAMPLES {
        let started = Instant::now();
        client.get(key.as_str(), None).await?;
        reads.push(elapsed_ns(started));
        let started = Instant::now();
        client.put(key.as_str(), "x", None).await?;
        writes.push(elapsed_ns(started));
    }
    client.delete(key.as_str(), None).await?;
    Ok((p50_us(&mut reads), p50_us(&mut writes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_is_its_own_run_of_samples() {
        // Round r's latencies are r·1000 + 1..=100 µs, in ns.
        let latencies: Vec<u64> = (0..ROUNDS * SAMPLES)
            .map(|i| ((i / SAMPLES) * 1000 + i % SAMPLES + 1) * 1000)
            .collect();
        assert_eq!(round_p99(&latencies, 0), Some(99.0));
        assert_eq!(round_p99(&latencies, 2), Some(2099.0));
        assert_eq!(round_p99(&latencies, ROUNDS), None);
    }
}
