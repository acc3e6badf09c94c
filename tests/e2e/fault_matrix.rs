//! The fault matrix: faults × engines × paths, each cell asserting the exact
//! outcome its guests see and that nothing is left behind (afterwards a fresh
//! guest takes the lock within 20 s: a leaked wait or node would block it).
//!
//! - faults: `deadline-race` (8 guests × 3 waits whose timeouts expire together
//!   behind another host's hold: each `timeout`, never `unavailable`),
//!   `cpu-starved` (the same while busy threads starve the host's tasks),
//!   `holder-traps` (a guest traps while holding; the waiting guest is
//!   granted), `session-expiry` (the holder's session expires: it reports
//!   `lost`, the waiting guest is granted), `slow-server` (every answer of the
//!   lock service is late: waits still end `timeout`, grants still come);
//! - engines: memory (its fault injection: `Fault::Expire`, grant delay),
//!   ZooKeeper, ZooKeeper with host-local hand-off, and with hand-off and lock
//!   caching as the command line runs it (one server for all cells),
//!   PostgreSQL (one server for all cells; `session-expiry` is the holder's
//!   backend terminated with `pg_terminate_backend`; it has no semaphores, so
//!   no `acquire-permit` cells), Valkey/Redis (one `redis-server` for all
//!   cells, 2 s sessions; `session-expiry` is the holder's host cut off by a
//!   proxy that stops forwarding, so its session key expires);
//! - paths: `acquire`, `acquire-permit`, `acquire-many`, `acquire-async`
//!   (through `lockctl2`, the 0.2.0 probe guest); and `key-value` under
//!   `session-expiry`: a `wasi:keyvalue` context fenced by the holder's lock
//!   writes, the session expires, the other host's waiter writes through its
//!   fence, and the expired holder's next write must not commit;
//! - and two faults of WIT 0.3.0 guests (`lockctl3`, a WASI 0.3 command), on
//!   every engine: `v3-cancelled-wait` (the guest drops its wait for a held
//!   lock once another is granted: it finishes, and nothing of the wait is
//!   left) and `v3-pending-end` (the guest's deadline passes while 5 of its
//!   calls wait and it holds 5 locks: all withdrawn and released).
//!
//! Host SIGKILL, leader kills and partitions are tested in `lifetime`,
//! `failover` and `partition`; SIGTERM in `deadlines`.
//!
//! Every cell's history of its lock (both hosts' sessions tapped: grants,
//! releases, the holder told `lost`) goes through the one checker of every
//! fault run: no two holds at once unless one was told `lost` first, tokens
//! rising.
//!
//! Each fault is a test of its own (`fault_matrix::deadline_race_cells`, …), on
//! servers of its own. The short form runs every cell once (CI). The soak
//! form runs each cell N times and prints the matrix with counts:
//! `WARDLOCK_SOAK=N cargo test -p wardlock-tests --test e2e fault_matrix -- --nocapture`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wardlock_host::backend::keyvalue::{Bucket, KvCommit, KvKey, KvWrite};
use wardlock_host::backend::memory::Fault as MemoryFault;
use wardlock_host::keyvalue::{KeyValueCtx, KvBuckets};
use wardlock_host::runner::{InstanceReport, Outcome, RunnerConfig};
use wardlock_host::{Grant, GrantStatus, LockBackend, LockSession, MemoryBackend, Mode};
use wardlock_postgres::{PostgresBackend, PostgresConfig, advisory_key};
use wardlock_tests::history_log::{self, HistoryLog};
use wardlock_tests::postgres::PgServer;
use wardlock_tests::probe::{HandoffProbe, MemoryProbe, Probe, ZkProbe};
use wardlock_tests::proxy::Proxy;
use wardlock_tests::redis_server::{Flavor, RedisServer};
use wardlock_tests::zookeeper::{ZkServer, expire_session};
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, lines, name, runner_with, spawn_run};
use wardlock_valkey::{ValkeyBackend, ValkeyConfig};
use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

const ROOT: &str = "/wardlock";
const WAITERS: usize = 8;
const ROUNDS: usize = 3;
const SHORT_TIMEOUT_MS: u64 = 200;
const LONG_TIMEOUT_MS: u64 = 10_000;
/// How long the fresh guest after each cell waits for the lock. A leaked
/// wait or node blocks it for as long as its host lives (every host outlives
/// its cells), so the bound tells "left behind" from "slow" at any size; 20 s
/// leaves room for a host that other tests starve (at 5 s a clean-clone CI run
/// of 62d71c9 saw a `timeout` there, its cells run beside other tests).
const FRESH_GUEST_TIMEOUT_MS: u64 = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    DeadlineRace,
    CpuStarved,
    HolderTraps,
    SessionExpiry,
    SlowServer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Memory,
    ZooKeeper,
    Handoff,
    /// Hand-off with lock caching, as `wardlock run` and `serve` default to.
    Cached,
    Postgres,
    Valkey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Lock,
    Permit,
    Many,
    Async,
}

const ENGINES: [Engine; 6] = [
    Engine::Memory,
    Engine::ZooKeeper,
    Engine::Handoff,
    Engine::Cached,
    Engine::Postgres,
    Engine::Valkey,
];
const PATHS: [Path; 4] = [Path::Lock, Path::Permit, Path::Many, Path::Async];

/// What a guest's wait came to, read from its last line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Granted,
    Timeout,
    Other(String),
}

impl Path {
    /// `lockctl2` commands that wait for `lock` (at most `timeout_ms`) by this
    /// path, as the guest's `round`-th wait; the last line says how it went.
    fn commands(self, lock: &str, timeout_ms: u64, round: usize) -> Vec<String> {
        match self {
            Path::Lock => vec![format!("acquire x {timeout_ms} {lock}")],
            Path::Permit => vec![format!("permit 1 {timeout_ms} {lock}")],
            Path::Many => vec![format!("many {timeout_ms} x:{lock}")],
            Path::Async => {
                let pending = format!("p{}", round + 1);
                vec![
                    format!("async x {timeout_ms} {lock}"),
                    format!("race {pending} {}", LONG_TIMEOUT_MS * 2),
                    format!("get {pending}"),
                ]
            }
        }
    }

    /// How many output lines one wait prints.
    fn lines_per_wait(self) -> usize {
        match self {
            Path::Async => 3,
            _ => 1,
        }
    }

    fn seen(line: &str) -> Seen {
        if line.starts_with('h') || line.starts_with('q') {
            Seen::Granted
        } else if line == "err timeout" {
            Seen::Timeout
        } else {
            Seen::Other(line.to_owned())
        }
    }

    /// Every wait's outcome in a guest's report (the last line of each).
    fn waits(self, report: &InstanceReport) -> Vec<Seen> {
        lines(report)
            .chunks(self.lines_per_wait())
            .map(|wait| Self::seen(wait.last().map(String::as_str).unwrap_or_default()))
            .collect()
    }

    /// A native hold of `lock` by this path's kind (a lock or one permit).
    async fn hold(self, session: &dyn LockSession, lock: &str) -> Grant {
        let lock = name(lock);
        let held = match self {
            Path::Permit => {
                session
                    .semaphores()
                    .expect("semaphores")
                    .acquire_permit(&lock, 1, Some(TEST_WAIT_LIMIT))
                    .await
            }
            _ => {
                session
                    .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                    .await
            }
        };
        held.unwrap_or_else(|e| panic!("the native holder of {lock}: {e}"))
    }
}

/// The lock services the matrix runs on.
struct World {
    zk: ZkServer,
    pg: PgServer,
    redis: RedisServer,
}

/// One cell's hosts: the holder's (direct, through a proxy on ZooKeeper) and
/// the waiting guests' (by engine, through a proxy of its own).
struct Hosts {
    /// The holder's host as the guests' runner sees it (tapped).
    holder: Arc<dyn LockBackend>,
    /// The same host, for the native holds the log records itself.
    native: Arc<dyn LockBackend>,
    waiter: Arc<dyn LockBackend>,
    memory: Option<MemoryBackend>,
    holder_zk: Option<(ZooKeeperBackend, Proxy)>,
    /// On Postgres: the holder's backend is terminated by key.
    postgres: bool,
    /// On Valkey/Redis: the holder's proxy, partitioned to expire its
    /// session.
    holder_valkey: Option<Proxy>,
    waiter_proxy: Option<Proxy>,
    probe: Arc<dyn Probe>,
    /// The cell's lock's history: both hosts' sessions are tapped.
    log: Arc<HistoryLog>,
}

impl World {
    /// A ZooKeeper, a PostgreSQL and a Redis server, for one test's cells.
    fn start() -> World {
        World {
            zk: ZkServer::start(),
            pg: PgServer::start(),
            redis: RedisServer::start(Flavor::Redis),
        }
    }

    /// The hosts of one cell, their grants of `lock` recorded in one history.
    async fn hosts(&self, engine: Engine, lock: &str) -> Hosts {
        let mut hosts = self.untapped_hosts(engine).await;
        hosts.holder = history_log::tap(hosts.holder, &hosts.log, "holder-host/", lock);
        hosts.waiter = history_log::tap(hosts.waiter, &hosts.log, "waiter-host/", lock);
        hosts
    }

    async fn untapped_hosts(&self, engine: Engine) -> Hosts {
        if engine == Engine::Memory {
            let memory = MemoryBackend::new();
            return Hosts {
                native: Arc::new(memory.clone()),
                holder: Arc::new(memory.clone()),
                waiter: Arc::new(memory.clone()),
                memory: Some(memory.clone()),
                holder_zk: None,
                postgres: false,
                holder_valkey: None,
                waiter_proxy: None,
                probe: Arc::new(MemoryProbe(memory)),
                log: HistoryLog::new(),
            };
        }
        if engine == Engine::Postgres {
            let holder = Arc::new(
                PostgresBackend::connect(PostgresConfig::new(&self.pg.url()))
                    .await
                    .expect("holder host"),
            );
            let waiter_proxy = Proxy::start(self.pg.address()).await;
            let url = format!("postgres://wardlock@{}/wardlock", waiter_proxy.address());
            let waiter = PostgresBackend::connect(PostgresConfig::new(&url))
                .await
                .expect("waiter host");
            return Hosts {
                native: holder.clone(),
                holder: holder.clone(),
                waiter: Arc::new(waiter),
                memory: None,
                holder_zk: None,
                postgres: true,
                holder_valkey: None,
                waiter_proxy: Some(waiter_proxy),
                probe: Arc::new(HandoffProbe(holder)),
                log: HistoryLog::new(),
            };
        }
        if engine == Engine::Valkey {
            return self.valkey_hosts().await;
        }
        let holder_proxy = Proxy::start(self.zk.address()).await;
        let holder = ZooKeeperBackend::connect(
            ZooKeeperConfig::new(holder_proxy.address())
                .root(ROOT)
                .session_timeout(Duration::from_secs(4)),
        )
        .await
        .expect("holder host");
        let waiter_proxy = Proxy::start(self.zk.address()).await;
        let mut config = ZooKeeperConfig::new(waiter_proxy.address()).root(ROOT);
        if engine == Engine::Handoff {
            config = config.local_handoff(LocalHandoff::default());
        }
        if engine == Engine::Cached {
            config = config.local_handoff(LocalHandoff::cached());
        }
        let waiter = ZooKeeperBackend::connect(config)
            .await
            .expect("waiter host");
        Hosts {
            native: Arc::new(holder.clone()),
            holder: Arc::new(holder.clone()),
            waiter: Arc::new(waiter),
            memory: None,
            holder_zk: Some((holder, holder_proxy)),
            postgres: false,
            holder_valkey: None,
            waiter_proxy: Some(waiter_proxy),
            probe: Arc::new(ZkProbe::connect(&self.zk.address(), ROOT).await),
            log: HistoryLog::new(),
        }
    }
}

impl World {
    /// Valkey/Redis hosts, each through a proxy of its own (2 s sessions):
    /// the holder's is partitioned to expire its session, the waiter's
    /// slowed for `slow-server`.
    async fn valkey_hosts(&self) -> Hosts {
        let host = |proxy: &Proxy| {
            ValkeyConfig::new(format!("redis://{}", proxy.address()))
                .session_timeout(Duration::from_secs(2))
        };
        let holder_proxy = Proxy::start(format!("127.0.0.1:{}", self.redis.port())).await;
        let holder = Arc::new(
            ValkeyBackend::connect(host(&holder_proxy))
                .await
                .expect("holder host"),
        );
        let waiter_proxy = Proxy::start(format!("127.0.0.1:{}", self.redis.port())).await;
        let waiter = ValkeyBackend::connect(host(&waiter_proxy))
            .await
            .expect("waiter host");
        Hosts {
            native: holder.clone(),
            holder: holder.clone(),
            waiter: Arc::new(waiter),
            memory: None,
            holder_zk: None,
            postgres: false,
            holder_valkey: Some(holder_proxy),
            waiter_proxy: Some(waiter_proxy),
            probe: Arc::new(HandoffProbe(holder)),
            log: HistoryLog::new(),
        }
    }
}

impl Hosts {
    /// A native hold of `lock` by `path`'s kind on the holder's host,
    /// recorded in the cell's history and its status read at every later
    /// grant ([`HistoryLog::watch`]).
    async fn native_hold(&self, path: Path, lock: &str) -> (Arc<dyn LockSession>, Grant) {
        let session: Arc<dyn LockSession> = Arc::from(self.native.open_session("holder"));
        let grant = path.hold(session.as_ref(), lock).await;
        self.log.watch(session.clone(), grant, "native-holder");
        (session, grant)
    }

    fn runner(&self, backend: &Arc<dyn LockBackend>) -> Arc<wardlock_host::runner::Runner> {
        runner_with(
            Guest::Lockctl2,
            RunnerConfig {
                backend: backend.clone(),
                timeout: Some(TEST_WAIT_LIMIT),
                ..RunnerConfig::default()
            },
        )
    }

    /// Runs one guest on the waiters' host with `commands`.
    async fn guest(&self, commands: &[String]) -> InstanceReport {
        let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
        spawn_run(&self.runner(&self.waiter), 0, &commands)
            .await
            .expect("guest task")
    }

    /// Nothing left behind: a fresh guest takes `lock` by `path` in time.
    async fn free_afterwards(&self, path: Path, lock: &str) -> Result<(), String> {
        let report = self
            .guest(&path.commands(lock, FRESH_GUEST_TIMEOUT_MS, 0))
            .await;
        match path.waits(&report).as_slice() {
            [Seen::Granted] => Ok(()),
            other => Err(format!("afterwards a fresh guest saw {other:?}")),
        }
    }

    /// Makes every answer of the lock service late (memory: grants).
    fn slow_down(&self) {
        let delay = Duration::from_millis(20);
        if let Some(memory) = &self.memory {
            memory.delay_grants(delay);
        }
        if let Some(proxy) = &self.waiter_proxy {
            proxy.delay_replies(delay);
        }
    }

    /// Returns once the waiter's host waits for `lock` on the server
    /// (PostgreSQL: a `pg_locks` row not granted), so the cell expires a
    /// holder that someone waits behind. Without it the expiry could come
    /// first, and the waiter's first try find the lock free: a try that
    /// follows a terminated backend is granted at once, with nothing to say
    /// a holder ended a moment before (the waits' hold-back, `confirm` in
    /// the engine's `recipe.rs`, needs the processes queued ahead), and a
    /// CI run saw the waiter granted before the terminated holder's host
    /// had read its FATAL (`SessionExpiry × Postgres × Many`: "held the
    /// lock at once, neither told lost"). docs/postgres.md says so. The
    /// other engines need no wait: an expired session's nodes outlive the
    /// holder's clock (memory, Valkey/Redis) or the overlap is allowed
    /// (a ZooKeeper session closed from outside, [`checked`]).
    async fn waiter_queued(&self, world: &World, lock: &str) {
        if !self.postgres {
            return;
        }
        let key = advisory_key(&name(lock));
        crate::postgres::wait_for(&world.pg, |locks| {
            locks.iter().any(|l| l.key == key && !l.granted)
        })
        .await;
    }

    /// Expires the holder's session (memory: injected; Postgres: its
    /// backend holding `lock` terminated; Valkey/Redis: its host cut off
    /// by a proxy that stops forwarding, so its session key expires).
    async fn expire_holder(&self, world: &World, lock: &str) {
        if self.postgres {
            let key = advisory_key(&name(lock));
            let terminated =
                tokio::task::block_in_place(|| world.pg.terminate_backends_holding(key));
            assert_eq!(terminated, 1, "the holder's backend of {lock}");
        }
        if let Some(memory) = &self.memory {
            memory.inject("holder", MemoryFault::Expire);
        }
        if let Some((holder, proxy)) = &self.holder_zk {
            expire_session(holder, proxy, &world.zk).await;
        }
        if let Some(proxy) = &self.holder_valkey {
            proxy.partition(true);
        }
    }
}

/// Busy threads that starve the host's tasks of CPU while they live.
struct CpuHog {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuHog {
    fn start() -> CpuHog {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..4)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                    }
                })
            })
            .collect();
        CpuHog { stop, threads }
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// 8 guests × 3 waits behind a native hold, timeouts expiring together.
async fn deadline_race(hosts: &Hosts, path: Path, lock: &str) -> Result<(), String> {
    let (_holder, grant) = hosts.native_hold(path, lock).await;
    let commands: Vec<String> = (0..ROUNDS)
        .flat_map(|round| path.commands(lock, SHORT_TIMEOUT_MS, round))
        .collect();
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let runner = hosts.runner(&hosts.waiter);
    let guests: Vec<_> = (0..WAITERS)
        .map(|i| spawn_run(&runner, i, &commands))
        .collect();
    let mut wrong = Vec::new();
    for guest in guests {
        let report = guest.await.expect("guest task");
        let waits = path.waits(&report);
        if waits.len() != ROUNDS || waits.iter().any(|w| *w != Seen::Timeout) {
            wrong.push(format!("{waits:?} ({:?})", report.outcome));
        }
    }
    hosts
        .log
        .release_watched(grant.id)
        .map_err(|e| e.to_string())?;
    if !wrong.is_empty() {
        return Err(format!("waits that were not `timeout`: {wrong:?}"));
    }
    hosts.free_afterwards(path, lock).await
}

/// A guest traps while holding; the guest waiting behind it is granted.
async fn holder_traps(hosts: &Hosts, path: Path, lock: &str) -> Result<(), String> {
    let gate = format!("{lock}-gate");
    let gatekeeper = hosts.holder.open_session("gatekeeper");
    let gate_grant = Path::Lock.hold(gatekeeper.as_ref(), &gate).await;
    let mut trapper = path.commands(lock, LONG_TIMEOUT_MS, 0);
    trapper.push(format!("acquire x - {gate}"));
    trapper.push("trap".to_owned());
    let trapper: Vec<&str> = trapper.iter().map(String::as_str).collect();
    let holder = spawn_run(&hosts.runner(&hosts.holder), 0, &trapper);
    // The trapping guest holds `lock` once it waits at the gate.
    hosts.probe.wait_len(&gate, 2).await;
    let waiter = {
        let commands = path.commands(lock, LONG_TIMEOUT_MS, 0);
        let runner = hosts.runner(&hosts.waiter);
        let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
        spawn_run(&runner, 1, &commands)
    };
    gatekeeper
        .release(gate_grant.id)
        .map_err(|e| e.to_string())?;
    let holder = holder.await.expect("holder task");
    if !matches!(holder.outcome, Outcome::Trap(_)) {
        return Err(format!("the holder ended {:?}", holder.outcome));
    }
    let waiter = waiter.await.expect("waiter task");
    match path.waits(&waiter).as_slice() {
        [Seen::Granted] => {}
        other => return Err(format!("the waiter saw {other:?}")),
    }
    hosts.free_afterwards(path, lock).await
}

/// The holder's session expires: it reports `lost`; the waiter is granted.
async fn session_expiry(
    world: &World,
    hosts: &Hosts,
    path: Path,
    lock: &str,
) -> Result<(), String> {
    let (holder, grant) = hosts.native_hold(path, lock).await;
    let waiter = {
        let commands = path.commands(lock, LONG_TIMEOUT_MS, 0);
        let runner = hosts.runner(&hosts.waiter);
        let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
        spawn_run(&runner, 0, &commands)
    };
    hosts.waiter_queued(world, lock).await;
    hosts.expire_holder(world, lock).await;
    let waiter = waiter.await.expect("waiter task");
    match path.waits(&waiter).as_slice() {
        [Seen::Granted] => {}
        other => return Err(format!("the waiter saw {other:?}")),
    }
    let status = holder.status(grant.id);
    if status != GrantStatus::Lost {
        return Err(format!("the expired holder reports {status:?}"));
    }
    hosts.free_afterwards(path, lock).await
}

/// The key-value cell (`session-expiry` × an engine × `key-value`): a
/// holder's `wasi:keyvalue` context fenced by its lock (as a declared lock
/// fences an instance's writes) writes; its session expires; the waiter of
/// the other host is granted and writes through its own fence; the expired
/// holder's next write must not commit (whatever it is told: `lost`, or
/// `unavailable` while its host is cut off), and the entry is the waiter's.
async fn key_value_session_expiry(world: &World, hosts: &Hosts, lock: &str) -> Result<(), String> {
    let (holder, grant) = hosts.native_hold(Path::Lock, lock).await;
    let names = [lock.to_owned()];
    let fenced = KeyValueCtx::fenced(holder, vec![grant.id], &names, KvBuckets::default());
    let (bucket, key) = (Bucket::default(), KvKey::new(lock).expect("key"));
    let put = |value: &str| [KvWrite::put(key.clone(), value.as_bytes().to_vec())];
    let first = fenced.write(&bucket, &put("holder")).await;
    if first != Ok(KvCommit::Committed) {
        return Err(format!("the holder's fenced write: {first:?}"));
    }
    let waiter: Arc<dyn LockSession> = Arc::from(hosts.waiter.open_session("kv-waiter"));
    let waiting = tokio::spawn({
        let (waiter, lock) = (waiter.clone(), name(lock));
        let wait = Duration::from_millis(LONG_TIMEOUT_MS);
        async move { waiter.acquire(&lock, Mode::Exclusive, Some(wait)).await }
    });
    hosts.expire_holder(world, lock).await;
    let granted = match waiting.await.expect("waiter task") {
        Ok(granted) => granted,
        Err(error) => return Err(format!("the waiter: {error}")),
    };
    let store = waiter.key_value().expect("a key-value store");
    let theirs = store.kv_write(&bucket, &put("waiter"), &[granted.id]).await;
    if theirs != Ok(KvCommit::Committed) {
        return Err(format!("the waiter's fenced write: {theirs:?}"));
    }
    let stale = fenced.write(&bucket, &put("stale")).await;
    if stale.is_ok() {
        return Err(format!("the expired holder's write answered {stale:?}"));
    }
    let entry = store
        .kv_get(&bucket, &key)
        .await
        .map_err(|e| e.to_string())?;
    if entry.as_ref().map(|e| e.value.as_slice()) != Some(b"waiter".as_slice()) {
        return Err(format!("the entry after the stale write: {entry:?}"));
    }
    waiter.release(granted.id).map_err(|e| e.to_string())
}

async fn cell(
    world: &World,
    fault: Fault,
    engine: Engine,
    path: Path,
    round: usize,
) -> Result<(), String> {
    let lock = format!("m-{fault:?}-{engine:?}-{path:?}-{round}").to_lowercase();
    let hosts = world.hosts(engine, &lock).await;
    let outcome = match fault {
        Fault::DeadlineRace => deadline_race(&hosts, path, &lock).await,
        Fault::CpuStarved => {
            let _hog = CpuHog::start();
            deadline_race(&hosts, path, &lock).await
        }
        Fault::HolderTraps => holder_traps(&hosts, path, &lock).await,
        Fault::SessionExpiry => session_expiry(world, &hosts, path, &lock).await,
        Fault::SlowServer => {
            hosts.slow_down();
            deadline_race(&hosts, path, &lock).await
        }
    };
    outcome?;
    checked(&hosts, fault, engine)
}

/// The one checker's verdict on the cell's history: no two holds at once
/// unless one was told `lost` first, tokens rising. A ZooKeeper session
/// expiry is exempt from the first rule: `expire_session` closes the
/// holder's session from another client (with its password) while the
/// holder's host is cut off, so the server may free the lock before anything
/// could tell the holder. Whether the checker then sees the overlap depends
/// on which comes first, the waiter's grant or the cut-off holder's own
/// clock saying `lost` (one CI run in about five saw the clock first, on the
/// cached engine's permit cell), so an overlap is allowed there, not
/// required; a session that expires by itself is the partition tests'
/// (`partition`).
fn checked(hosts: &Hosts, fault: Fault, engine: Engine) -> Result<(), String> {
    let forced_close = fault == Fault::SessionExpiry
        && matches!(engine, Engine::ZooKeeper | Engine::Handoff | Engine::Cached);
    let report = hosts.log.check_holds();
    let counts = &report.counts;
    if counts.holds == 0 {
        return Err("the history recorded no hold".to_owned());
    }
    if (counts.overlaps > 0 && !forced_close) || counts.token_regressions > 0 {
        return Err(format!(
            "the checker: {} overlaps, {} token regressions: {:?}",
            counts.overlaps, counts.token_regressions, report.problems
        ));
    }
    Ok(())
}

/// The cells of `fault`, once each (or `WARDLOCK_SOAK` times each, printing the counts), on
/// servers of their own: each fault is a test of its own, beside other tests
/// but for `cpu-starved`, which starves its own host and runs alone
/// (`.config/nextest.toml`).
async fn matrix(fault: Fault) {
    let (rounds, world) = (rounds(), World::start());
    let mut failures = Vec::new();
    println!("| fault | engine | path | passed |");
    println!("| --- | --- | --- | --- |");
    for engine in ENGINES {
        for path in PATHS {
            if engine == Engine::Postgres && path == Path::Permit {
                println!("| {fault:?} | {engine:?} | {path:?} | n/a (no semaphores) |");
                continue;
            }
            let mut passed = 0;
            for round in 0..rounds {
                match cell(&world, fault, engine, path, round).await {
                    Ok(()) => passed += 1,
                    Err(why) => failures.push(format!("{fault:?} × {engine:?} × {path:?}: {why}")),
                }
            }
            println!("| {fault:?} | {engine:?} | {path:?} | {passed}/{rounds} |");
        }
    }
    assert_cells_passed(&failures);
}

/// The key-value cells (`session-expiry`: a holder's fenced write after its
/// session expired must not commit), once each or `WARDLOCK_SOAK` times.
async fn key_value_matrix() {
    let (rounds, world) = (rounds(), World::start());
    let mut failures = Vec::new();
    for engine in ENGINES {
        let mut passed = 0;
        for round in 0..rounds {
            let lock = format!("m-kv-{engine:?}-{round}").to_lowercase();
            let hosts = world.hosts(engine, &lock).await;
            let outcome = key_value_session_expiry(&world, &hosts, &lock).await;
            match outcome.and_then(|()| checked(&hosts, Fault::SessionExpiry, engine)) {
                Ok(()) => passed += 1,
                Err(why) => failures.push(format!("SessionExpiry × {engine:?} × KeyValue: {why}")),
            }
        }
        println!("| SessionExpiry | {engine:?} | KeyValue | {passed}/{rounds} |");
    }
    assert_cells_passed(&failures);
}

/// The WIT 0.3.0 faults of [`v3_matrix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V3Fault {
    /// The guest awaits the held lock and a free one, and drops the first
    /// wait once the second is granted.
    CancelledWait,
    /// The guest's deadline passes while 5 of its calls wait behind the
    /// holder and it holds 5 locks of its own.
    PendingEnd,
}

/// A `lockctl3` runner on `backend`, each instance limited to `deadline`.
fn v3_runner(
    backend: &Arc<dyn LockBackend>,
    deadline: Duration,
) -> Arc<wardlock_host::runner::Runner> {
    runner_with(
        Guest::Lockctl3,
        RunnerConfig {
            backend: backend.clone(),
            timeout: Some(deadline),
            ..RunnerConfig::default()
        },
    )
}

/// One cell of [`v3_matrix`]: a native holder on the holder's host, the
/// 0.3 guest on the waiters' host, then nothing left behind (a fresh guest
/// takes the lock, and after `PendingEnd` the first of the guest's own).
async fn v3_cell(hosts: &Hosts, fault: V3Fault, lock: &str) -> Result<(), String> {
    let (_holder, grant) = hosts.native_hold(Path::Lock, lock).await;
    let report = match fault {
        V3Fault::CancelledWait => {
            let free = format!("{lock}-free");
            let runner = v3_runner(&hosts.waiter, TEST_WAIT_LIMIT);
            spawn_run(&runner, 0, &["cancel", lock, &free]).await
        }
        V3Fault::PendingEnd => {
            let runner = v3_runner(&hosts.waiter, Duration::from_secs(3));
            spawn_run(&runner, 0, &["pending-end", "5", "5", lock]).await
        }
    }
    .expect("guest task");
    let out = lines(&report);
    let expected = match fault {
        V3Fault::CancelledWait => {
            report.outcome.is_success()
                && out.len() == 1
                && out[0].starts_with(&format!(
                    "cancel: {lock}-free first; {lock} has 1 holders and "
                ))
        }
        V3Fault::PendingEnd => {
            matches!(report.outcome, Outcome::TimedOut(_)) && out == ["waiting: 5 held, 5 pending"]
        }
    };
    if !expected {
        return Err(format!(
            "the guest: {:?}, {out:?}, {}",
            report.outcome,
            report.stderr_text()
        ));
    }
    hosts
        .log
        .release_watched(grant.id)
        .map_err(|e| e.to_string())?;
    hosts.free_afterwards(Path::Lock, lock).await?;
    if fault == V3Fault::PendingEnd {
        hosts
            .free_afterwards(Path::Lock, &format!("{lock}-held/l0"))
            .await?;
    }
    Ok(())
}

/// The WIT 0.3.0 cells (`v3-cancelled-wait`, `v3-pending-end`) × every
/// engine, once each or `WARDLOCK_SOAK` times.
async fn v3_matrix() {
    let (rounds, world) = (rounds(), World::start());
    let mut failures = Vec::new();
    for fault in [V3Fault::CancelledWait, V3Fault::PendingEnd] {
        for engine in ENGINES {
            let mut passed = 0;
            for round in 0..rounds {
                let lock = format!("m-v3-{fault:?}-{engine:?}-{round}").to_lowercase();
                let hosts = world.hosts(engine, &lock).await;
                let outcome = v3_cell(&hosts, fault, &lock).await;
                // No session is closed from outside here: no overlap is
                // allowed (the rule of every fault but `SessionExpiry`).
                match outcome.and_then(|()| checked(&hosts, Fault::DeadlineRace, engine)) {
                    Ok(()) => passed += 1,
                    Err(why) => failures.push(format!("{fault:?} × {engine:?} × V3: {why}")),
                }
            }
            println!("| {fault:?} | {engine:?} | V3 | {passed}/{rounds} |");
        }
    }
    assert_cells_passed(&failures);
}

/// Fails the test naming every failed cell, if any failed.
fn assert_cells_passed(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "failed cells:\n{}",
        failures.join("\n")
    );
}

/// How many times each cell runs: `WARDLOCK_SOAK`, or once.
fn rounds() -> usize {
    std::env::var("WARDLOCK_SOAK")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_race_cells() {
    matrix(Fault::DeadlineRace).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_starved_cells() {
    matrix(Fault::CpuStarved).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_traps_cells() {
    matrix(Fault::HolderTraps).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_cells() {
    matrix(Fault::SessionExpiry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_server_cells() {
    matrix(Fault::SlowServer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_value_session_expiry_cells() {
    key_value_matrix().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_cells() {
    v3_matrix().await;
}
