//! The systems under measurement and how a phase of client loops runs on each.
//!
//! Every client runs the same loop: `ops` times acquire (mode from its [`Plan`]),
//! optionally the exclusion check of [`super::check`], release; timing each op.
//! Native clients run it in Rust ([`native`]); guest clients run it inside
//! `bench-guest` instances ([`guest`]).

pub(crate) mod curator;
pub(crate) mod etcd_floor;
pub(crate) mod guest;
pub(crate) mod host_process;
pub(crate) mod native;
pub(crate) mod pg_floor;
pub(crate) mod zk_floor;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::ValueEnum;
use wardlock_host::LockName;
use wardlock_host::runner::Runner;

use super::check::Plan;
use super::cli::value_name;
use super::cpu;
use super::env::Env;
use super::zk_stats::ZkDelta;

/// A system under measurement; its value name (`--systems`, the output) is
/// the variant's name in kebab case, but for the ZooKeeper backend's two,
/// which keep the names tests/BENCHMARKS.md and recorded results use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub(crate) enum System {
    /// Raw `zookeeper-client`: create EPHEMERAL_SEQUENTIAL, get_children,
    /// delete, awaited one after another; each client its own session.
    ZkFloor,
    /// `ZooKeeperBackend` called through `LockSession` from Rust.
    #[value(name = "wardlock-native")]
    ZooKeeperNative,
    /// `bench-guest` components on the ZooKeeper backend, through the WIT.
    #[value(name = "wardlock-guest")]
    ZooKeeperGuest,
    /// `MemoryBackend` called through `LockSession` from Rust.
    MemoryNative,
    /// `bench-guest` components on the in-memory backend, through the WIT.
    MemoryGuest,
    /// Apache Curator (Debian's jars): `InterProcessMutex` /
    /// `InterProcessReadWriteLock`, one `CuratorFramework` per client, all
    /// clients threads of one JVM.
    Curator,
    /// Apache Curator as an application uses it: every client a thread of one
    /// JVM with a lock object of its own, all on one shared
    /// `CuratorFramework` (one ZooKeeper session).
    CuratorShared,
    /// Raw `etcd-client` running Go's `concurrency.Mutex` recipe, each client
    /// its own lease (only with `--etcd`).
    EtcdFloor,
    /// `EtcdBackend` called through `LockSession` from Rust (only with `--etcd`).
    EtcdNative,
    /// `bench-guest` components on the etcd backend, through the WIT (only
    /// with `--etcd`).
    EtcdGuest,
    /// Raw advisory locks through sqlx's `PgAdvisoryLock`, each client its
    /// own connection (only with `--postgres`).
    PostgresFloor,
    /// `PostgresBackend` called through `LockSession` from Rust (only with
    /// `--postgres`).
    PostgresNative,
    /// `bench-guest` components on the PostgreSQL backend, through the WIT
    /// (only with `--postgres`).
    PostgresGuest,
}

impl System {
    /// The name in the output and in `--systems`.
    pub(crate) fn name(self) -> String {
        value_name(&self)
    }

    /// True for the systems that lock on ZooKeeper.
    pub(crate) fn uses_zookeeper(self) -> bool {
        matches!(
            self,
            System::ZkFloor
                | System::ZooKeeperNative
                | System::ZooKeeperGuest
                | System::Curator
                | System::CuratorShared
        )
    }

    /// True for the systems that lock on etcd.
    pub(crate) fn uses_etcd(self) -> bool {
        matches!(
            self,
            System::EtcdFloor | System::EtcdNative | System::EtcdGuest
        )
    }

    /// True for the systems that lock on PostgreSQL.
    pub(crate) fn uses_postgres(self) -> bool {
        matches!(
            self,
            System::PostgresFloor | System::PostgresNative | System::PostgresGuest
        )
    }

    /// For a guest system, the native system on the same backend.
    pub(crate) fn native_twin(self) -> Option<System> {
        match self {
            System::ZooKeeperGuest => Some(System::ZooKeeperNative),
            System::MemoryGuest => Some(System::MemoryNative),
            System::EtcdGuest => Some(System::EtcdNative),
            System::PostgresGuest => Some(System::PostgresNative),
            _ => None,
        }
    }

    /// The raw-client floor this system's ratios are taken against.
    pub(crate) fn floor(self) -> System {
        if self.uses_etcd() {
            System::EtcdFloor
        } else if self.uses_postgres() {
            System::PostgresFloor
        } else {
            System::ZkFloor
        }
    }
}

/// What one client does.
#[derive(Debug, Clone)]
pub(crate) struct LoopSpec {
    pub lock: LockName,
    pub plan: Plan,
    pub ops: u64,
    /// Counter file (a name inside the run's data directory) checked under the
    /// lock, if any.
    pub check: Option<String>,
    /// Open the counter file for each check and close it before the release,
    /// instead of once for the whole loop: one descriptor per lock held, not
    /// per client (`scale`'s thousands of instances).
    pub reopen: bool,
}

impl LoopSpec {
    /// `ops` exclusive acquisitions of `lock`, each checked on the counter file
    /// `check` (opened once for the loop).
    pub(crate) fn checked(lock: LockName, ops: u64, check: &str) -> LoopSpec {
        LoopSpec {
            lock,
            plan: Plan::Exclusive,
            ops,
            check: Some(check.to_owned()),
            reopen: false,
        }
    }
}

/// What one client measured.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoopResult {
    pub latencies_ns: Vec<u64>,
    pub writes: u64,
    pub violations: u64,
    /// Wall clock (Unix ns) when the loop started and after its last release.
    pub start_unix_ns: u128,
    pub end_unix_ns: u128,
}

/// The clients of one phase, run concurrently.
#[derive(Default)]
pub(crate) struct Phase {
    pub results: Vec<LoopResult>,
    /// Server counters over the loops.
    pub zk: Option<ZkDelta>,
    /// This process's CPU time over the loops (plus the JVM's, for `curator`).
    pub cpu: Option<Duration>,
    /// CPU time of another process running the loops (the Curator JVM).
    pub other_cpu: Option<Duration>,
    _keep_alive: Vec<zookeeper_client::Client>,
}

impl Phase {
    /// A phase of `results` measured elsewhere (another process).
    pub(crate) fn of(results: Vec<LoopResult>) -> Phase {
        Phase {
            results,
            ..Phase::default()
        }
    }

    /// From the first client's start to the last client's end (wall clock, so
    /// guests and natives are timed alike: the loops only, not instantiation).
    pub(crate) fn wall(&self) -> Duration {
        let start = self.results.iter().map(|r| r.start_unix_ns).min();
        let end = self.results.iter().map(|r| r.end_unix_ns).max();
        match (start, end) {
            (Some(start), Some(end)) => {
                Duration::from_nanos(u64::try_from(end.saturating_sub(start)).unwrap_or(u64::MAX))
            }
            _ => Duration::ZERO,
        }
    }

    pub(crate) fn ops(&self) -> u64 {
        self.results
            .iter()
            .map(|r| r.latencies_ns.len() as u64)
            .sum()
    }

    pub(crate) fn writes(&self) -> u64 {
        self.results.iter().map(|r| r.writes).sum()
    }

    pub(crate) fn violations(&self) -> u64 {
        self.results.iter().map(|r| r.violations).sum()
    }

    pub(crate) fn latencies(&self) -> impl Iterator<Item = u64> + '_ {
        self.results
            .iter()
            .flat_map(|r| r.latencies_ns.iter().copied())
    }
}

/// The clients of a phase, connected (native) and ready to start.
pub(crate) struct Prepared {
    clients: Clients,
    specs: Vec<LoopSpec>,
    dir: PathBuf,
    /// zk-floor sessions, kept open until the phase's counters are read (their
    /// close requests are not part of the measurement).
    keep_alive: Vec<zookeeper_client::Client>,
}

enum Clients {
    Floor(Vec<zk_floor::FloorClient>),
    EtcdFloor(Vec<etcd_floor::EtcdFloorClient>),
    PgFloor(Vec<pg_floor::PgFloorClient>),
    Sessions(Vec<native::SessionLocker>),
    Guests(Arc<Runner>),
    /// The driver, and whether every client runs on its shared client.
    Curator(tokio::sync::OwnedMutexGuard<Option<curator::Driver>>, bool),
}

/// A started phase.
pub(crate) struct Running {
    task: tokio::task::JoinHandle<anyhow::Result<(Vec<LoopResult>, Option<Duration>)>>,
    keep_alive: Vec<zookeeper_client::Client>,
}

impl Prepared {
    /// Connects (zk-floor: one session per client, lock parents created) or opens
    /// the sessions (wardlock/memory native), or picks the guest runner.
    ///
    /// # Errors
    /// When ZooKeeper cannot be reached or the system needs what the run lacks.
    pub(crate) async fn new(
        env: &Env,
        system: System,
        specs: Vec<LoopSpec>,
    ) -> anyhow::Result<Prepared> {
        let mut keep_alive = Vec::new();
        let clients = match system {
            System::ZkFloor => {
                let zk = env.zk()?;
                let mut lockers = Vec::new();
                for spec in &specs {
                    let client =
                        zk_floor::FloorClient::connect(&zk.address, zk.session_timeout).await?;
                    client.prepare(&spec.lock).await?;
                    keep_alive.push(client.client().clone());
                    lockers.push(client);
                }
                Clients::Floor(lockers)
            }
            System::ZooKeeperNative => {
                Clients::Sessions(native::sessions(&env.zk()?.backend, specs.len()))
            }
            System::MemoryNative => Clients::Sessions(native::sessions(&env.memory, specs.len())),
            System::EtcdFloor => {
                let etcd = env.etcd()?;
                let mut lockers = Vec::new();
                for _ in &specs {
                    lockers.push(
                        etcd_floor::EtcdFloorClient::connect(&etcd.address, etcd.ttl_secs).await?,
                    );
                }
                Clients::EtcdFloor(lockers)
            }
            System::EtcdNative => {
                Clients::Sessions(native::sessions(env.etcd()?.backend.as_ref(), specs.len()))
            }
            System::PostgresFloor => {
                let pg = env.pg()?;
                let mut lockers = Vec::new();
                for _ in &specs {
                    lockers.push(pg_floor::PgFloorClient::connect(&pg.url).await?);
                }
                Clients::PgFloor(lockers)
            }
            System::PostgresNative => {
                Clients::Sessions(native::sessions(env.pg()?.native.as_ref(), specs.len()))
            }
            System::ZooKeeperGuest
            | System::MemoryGuest
            | System::EtcdGuest
            | System::PostgresGuest => Clients::Guests(env.guest_runner(system)?),
            System::Curator => {
                let mut driver = env.curator().await?;
                driver
                    .as_mut()
                    .context("no Curator driver")?
                    .prepare(specs.len())
                    .await?;
                Clients::Curator(driver, false)
            }
            System::CuratorShared => {
                let mut driver = env.curator().await?;
                driver
                    .as_mut()
                    .context("no Curator driver")?
                    .prepare_shared()
                    .await?;
                Clients::Curator(driver, true)
            }
        };
        Ok(Prepared {
            clients,
            specs,
            dir: env.dir().to_owned(),
            keep_alive,
        })
    }

    /// Guests of `runner` (one per spec), for a workload that needs a runner
    /// of its own.
    pub(crate) fn with_guests(env: &Env, runner: Arc<Runner>, specs: Vec<LoopSpec>) -> Prepared {
        Prepared {
            clients: Clients::Guests(runner),
            specs,
            dir: env.dir().to_owned(),
            keep_alive: Vec::new(),
        }
    }

    /// Starts every client's loop at once.
    pub(crate) fn start(self) -> Running {
        let Prepared {
            clients,
            specs,
            dir,
            keep_alive,
        } = self;
        let task = match clients {
            Clients::Floor(lockers) => {
                tokio::spawn(async move { Ok((native::run_all(lockers, specs, dir).await?, None)) })
            }
            Clients::EtcdFloor(lockers) => {
                tokio::spawn(async move { Ok((native::run_all(lockers, specs, dir).await?, None)) })
            }
            Clients::PgFloor(lockers) => {
                tokio::spawn(async move { Ok((native::run_all(lockers, specs, dir).await?, None)) })
            }
            Clients::Sessions(lockers) => {
                tokio::spawn(async move { Ok((native::run_all(lockers, specs, dir).await?, None)) })
            }
            Clients::Guests(runner) => {
                tokio::spawn(async move { Ok((guest::run_all(&runner, specs).await?, None)) })
            }
            Clients::Curator(mut driver, shared) => tokio::spawn(async move {
                let driver = driver.as_mut().context("no Curator driver")?;
                let (results, cpu) = driver.run(&specs, &dir, shared).await?;
                Ok((results, Some(cpu)))
            }),
        };
        Running { task, keep_alive }
    }
}

impl Running {
    /// Waits for every client.
    ///
    /// # Errors
    /// The first client's error.
    pub(crate) async fn finish(self) -> anyhow::Result<Phase> {
        let (results, other_cpu) = self.task.await.context("phase task panicked")??;
        Ok(Phase {
            results,
            zk: None,
            cpu: None,
            other_cpu,
            _keep_alive: self.keep_alive,
        })
    }
}

/// Runs `specs` as concurrent clients of `system`, with the server's counters
/// and this process's CPU time read around the loops (after connecting, before
/// closing); on PostgreSQL, the connections the system has open are recorded
/// ([`crate::env::PgEnv::take_connections`]).
///
/// # Errors
/// When a client fails (lock error, guest failure, check file I/O).
pub(crate) async fn run_phase(
    env: &Env,
    system: System,
    specs: Vec<LoopSpec>,
) -> anyhow::Result<Phase> {
    let clients = specs.len();
    let prepared = Prepared::new(env, system, specs).await?;
    let pg = env.pg().ok().filter(|_| system.uses_postgres());
    if let Some(pg) = pg
        && system == System::PostgresFloor
    {
        // One connection per client, open now.
        pg.record_open(system, clients);
        pg.count_server_connections(system).await;
    }
    let sampler = pg.and_then(|pg| pg.sampler(system));
    let mark = env.zk_mark(system);
    let cpu = cpu::process_cpu();
    let mut phase = prepared.start().finish().await?;
    phase.cpu = cpu::since(cpu).map(|cpu| cpu + phase.other_cpu.unwrap_or_default());
    phase.zk = env.zk_since(mark);
    if let (Some(pg), Some(sampler)) = (pg, sampler) {
        sampler.finish(pg).await;
        // The backend keeps what it opened (idle in its pool).
        pg.count_server_connections(system).await;
    }
    Ok(phase)
}

/// Joins spawned client tasks, in order.
///
/// # Errors
/// The first client error, or a panic in a client.
pub(crate) async fn join_all<T>(
    tasks: Vec<tokio::task::JoinHandle<anyhow::Result<T>>>,
) -> anyhow::Result<Vec<T>> {
    let mut results = Vec::with_capacity(tasks.len());
    let mut first_error = None;
    for (index, task) in tasks.into_iter().enumerate() {
        match task.await.context("client task panicked") {
            Ok(Ok(result)) => results.push(result),
            Ok(Err(error)) | Err(error) => {
                first_error.get_or_insert(error.context(format!("client {index}")));
            }
        }
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(results),
    }
}

/// The wall clock now, in Unix nanoseconds.
pub(crate) fn unix_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
