//! What every workload shares: the ZooKeeper server and wardlock's backends on
//! it (and on etcd and PostgreSQL when asked), the in-memory backend, guest
//! runners and the data directory for counter files.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use wardlock_etcd::{EtcdBackend, EtcdConfig};

use crate::cli::ZkSessions;
use wardlock_host::runner::{Preopen, Runner, RunnerConfig, Runtime, Stdio};
use wardlock_host::{LockBackend, MemoryBackend};
use wardlock_postgres::{PostgresBackend, PostgresConfig};
use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

use super::cli::Args;
use super::systems::System;
use super::systems::curator::Driver;
use super::systems::guest::GUEST_DATA_DIR;
use super::systems::pg_floor::FLOOR_APPLICATION;
use super::zk_stats::{ZkDelta, ZkSnapshot, ZkStats};
use wardlock_tests::{Guest, runner_with};

/// Root of wardlock's lock nodes during a run.
pub(crate) const WARDLOCK_ROOT: &str = "/wardlock-bench";

/// Longest any guest instance may run: a hang guard, not a measurement.
pub(crate) const GUEST_RUN_LIMIT: Duration = Duration::from_secs(600);

/// The ZooKeeper side of a run.
pub(crate) struct ZkEnv {
    pub address: String,
    pub stats: ZkStats,
    /// wardlock's backend ("this host"): one ZooKeeper session for all clients.
    pub backend: ZooKeeperBackend,
    pub session_timeout: Duration,
    /// False when `mntr` is unavailable: counters are then reported as null.
    pub counters: bool,
    /// How wardlock's backends are configured.
    pub options: BackendOptions,
}

/// How wardlock's ZooKeeper backends run: host-local hand-off (on, as in
/// `wardlock run` and `serve`, unless `--no-local-handoff`), lock caching
/// (on, as there, unless `--no-lock-cache`) and the session pool
/// (`--zk-sessions`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BackendOptions {
    pub local_handoff: bool,
    pub sessions: ZkSessions,
    /// The hand-off's bounds (`--handoff-max`, `--handoff-max-ms`) and the
    /// cache time (`linger`: [`LocalHandoff::cached`]'s, or zero with
    /// `--no-lock-cache`).
    pub limits: LocalHandoff,
}

impl BackendOptions {
    /// From the command line.
    pub(crate) fn from_args(args: &Args) -> BackendOptions {
        BackendOptions {
            local_handoff: !args.no_local_handoff,
            sessions: args.zk_sessions,
            limits: limits(args),
        }
    }

    /// The same backend without lock caching (`LocalHandoff::default()`'s
    /// zero linger): another host that gives its node up at every release.
    pub(crate) fn uncached(self) -> BackendOptions {
        BackendOptions {
            limits: LocalHandoff {
                linger: Duration::ZERO,
                ..self.limits
            },
            ..self
        }
    }

    /// Whether a released lock stays cached on the host.
    pub(crate) fn lock_cache(&self) -> bool {
        self.local_handoff && !self.limits.linger.is_zero()
    }
}

/// The hand-off's bounds of wardlock's ZooKeeper and etcd backends, as the
/// command line sets them: the product's defaults with lock caching
/// ([`LocalHandoff::cached`]; [`LocalHandoff::default`] with
/// `--no-lock-cache`) unless `--handoff-max` or `--handoff-max-ms` say
/// otherwise.
pub(crate) fn limits(args: &Args) -> LocalHandoff {
    let defaults = if args.no_lock_cache {
        LocalHandoff::default()
    } else {
        LocalHandoff::cached()
    };
    bounded(args, defaults)
}

/// `defaults` with `--handoff-max` and `--handoff-max-ms` applied.
fn bounded(args: &Args, defaults: LocalHandoff) -> LocalHandoff {
    LocalHandoff {
        max_handoffs: args.handoff_max.unwrap_or(defaults.max_handoffs),
        max_time: args
            .handoff_max_ms
            .map_or(defaults.max_time, Duration::from_millis),
        ..defaults
    }
}

impl ZkEnv {
    /// Connects wardlock's backend to `address` and checks `mntr`.
    ///
    /// # Errors
    /// When ZooKeeper cannot be reached.
    pub(crate) async fn connect(
        address: &str,
        session_timeout: Duration,
        options: BackendOptions,
    ) -> anyhow::Result<ZkEnv> {
        let backend = Self::backend(address, session_timeout, options).await?;
        let stats = ZkStats::new(address);
        let counters = match stats.snapshot() {
            Ok(_) => true,
            Err(error) => {
                eprintln!("wardlock-bench: no server counters ({error:#}); zk columns are null");
                false
            }
        };
        Ok(ZkEnv {
            address: address.to_owned(),
            stats,
            backend,
            session_timeout,
            counters,
            options,
        })
    }

    /// Another wardlock backend on the same server: another host, another
    /// ZooKeeper session.
    ///
    /// # Errors
    /// When ZooKeeper cannot be reached.
    pub(crate) async fn backend(
        address: &str,
        session_timeout: Duration,
        options: BackendOptions,
    ) -> anyhow::Result<ZooKeeperBackend> {
        let mut config = ZooKeeperConfig::new(address)
            .root(WARDLOCK_ROOT)
            .session_timeout(session_timeout);
        config = match options.sessions {
            ZkSessions::Auto => config.sessions_on_demand(wardlock_zookeeper::AUTO_SESSIONS),
            ZkSessions::Fixed(n) => config.sessions(n),
        };
        if options.local_handoff {
            config = config.local_handoff(options.limits);
        }
        ZooKeeperBackend::connect(config)
            .await
            .with_context(|| format!("wardlock cannot connect to ZooKeeper at {address}"))
    }
}

/// The etcd side of a run.
pub(crate) struct EtcdEnv {
    pub address: String,
    /// wardlock's backend ("this host"): one lease for all clients.
    pub backend: Arc<EtcdBackend>,
    /// The lease TTL of every client, seconds.
    pub ttl_secs: i64,
    /// The backend's hand-off (`LocalHandoff::NONE` with
    /// `--no-local-handoff`).
    pub handoff: LocalHandoff,
    /// False with `--no-local-handoff`.
    pub local_handoff: bool,
}

impl EtcdEnv {
    /// Connects wardlock's etcd backend (hand-off and lock caching as
    /// `--no-local-handoff` and `--no-lock-cache` say; etcd always queues one
    /// key per host and lock).
    ///
    /// # Errors
    /// When etcd cannot be reached.
    pub(crate) async fn connect(address: &str, args: &Args) -> anyhow::Result<EtcdEnv> {
        let handoff = if args.no_local_handoff {
            LocalHandoff::NONE
        } else {
            limits(args)
        };
        Self::connect_with(address, args, handoff).await
    }

    /// Connects another etcd backend (another host: its own lease) with
    /// `handoff`.
    ///
    /// # Errors
    /// When etcd cannot be reached.
    pub(crate) async fn connect_with(
        address: &str,
        args: &Args,
        handoff: LocalHandoff,
    ) -> anyhow::Result<EtcdEnv> {
        let config = EtcdConfig::new(address)
            .root(WARDLOCK_ROOT)
            .lease_ttl(args.session_timeout())
            .local_handoff(handoff);
        let ttl_secs = config.ttl_seconds();
        let backend = EtcdBackend::connect(config)
            .await
            .with_context(|| format!("wardlock cannot connect to etcd at {address}"))?;
        Ok(EtcdEnv {
            address: address.to_owned(),
            backend: Arc::new(backend),
            ttl_secs,
            handoff,
            local_handoff: !args.no_local_handoff,
        })
    }

    /// Whether a released lock stays cached on the host.
    pub(crate) fn lock_cache(&self) -> bool {
        !self.handoff.linger.is_zero()
    }
}

/// The `application_name` of `postgres-native`'s backend: its connections
/// counted apart from the guests' backend's, which keeps the engine's own
/// name (`wardlock`, unless the URL names one), as a real host does.
pub(crate) const NATIVE_APPLICATION: &str = "wardlock-bench-native";

/// The PostgreSQL side of a run.
pub(crate) struct PgEnv {
    pub url: String,
    /// `postgres-native`'s backend ("a host"): its connections are named
    /// [`NATIVE_APPLICATION`].
    pub native: Arc<PostgresBackend>,
    /// `postgres-guest`'s backend ("another host", never running at the same
    /// time as `native`): configured as `wardlock run --postgres URL` is.
    pub guest: Arc<PostgresBackend>,
    /// Whether hand-off runs with its bounds (not `--no-local-handoff`).
    pub local_handoff: bool,
    /// The guests' backend's `application_name`.
    guest_application: String,
    /// A connection of its own for reading `pg_stat_activity`.
    monitor: tokio::sync::Mutex<PgConnection>,
    /// Connections seen per system since the last [`PgEnv::take_connections`].
    connections: Mutex<HashMap<System, PgConnections>>,
    /// The server's version and the settings a lock's cost depends on
    /// ([`SERVER_SETTINGS`]), as the server reported them at the start: every
    /// PostgreSQL row carries them, so a run on another server says how it
    /// differed.
    pub settings: serde_json::Map<String, serde_json::Value>,
}

/// The settings of `pg_settings` that move the cost of a grant or of the
/// floor's statements: durability (a token's sequence WAL-logs ahead), the
/// WAL's flush, and the memory the lock manager and buffers get.
const SERVER_SETTINGS: &[&str] = &[
    "server_version",
    "fsync",
    "synchronous_commit",
    "wal_sync_method",
    "full_page_writes",
    "wal_level",
    "commit_delay",
    "shared_buffers",
    "max_connections",
    "max_locks_per_transaction",
];

/// Connections a PostgreSQL system had open during a workload's phases.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PgConnections {
    /// The most lock connections open at once: `open_connections()` of the
    /// system's backend sampled every millisecond during the loops (the
    /// floor: its clients).
    pub open_max: usize,
    /// The most rows of `pg_stat_activity` with the system's
    /// `application_name`, read after each phase's loops (the floor: before,
    /// once its clients connected).
    pub server_max: i64,
}

impl PgEnv {
    /// Connects wardlock's two PostgreSQL backends (hand-off as
    /// `--no-local-handoff` says) and the monitor connection.
    ///
    /// # Errors
    /// When PostgreSQL cannot be reached or refuses the role.
    pub(crate) async fn connect(url: &str, args: &Args) -> anyhow::Result<PgEnv> {
        // No lock caching: the command line does not cache on PostgreSQL
        // unless told `--linger-ms` (the engine tells a holder nothing when
        // someone queues).
        let handoff = if args.no_local_handoff {
            LocalHandoff::NONE
        } else {
            bounded(args, LocalHandoff::default())
        };
        let config = |url: &str| {
            PostgresConfig::new(url)
                .session_timeout(args.session_timeout())
                .local_handoff(handoff)
        };
        let connect = |config: PostgresConfig| async move {
            PostgresBackend::connect(config)
                .await
                .with_context(|| format!("wardlock cannot connect to PostgreSQL at {url}"))
        };
        let guest = connect(config(url)).await?;
        let native = connect(config(&with_application(url, NATIVE_APPLICATION))).await?;
        let options = PgConnectOptions::from_str(url)
            .with_context(|| format!("bad PostgreSQL URL {url:?}"))?
            .application_name("wardlock-bench-monitor");
        let mut monitor = PgConnection::connect_with(&options)
            .await
            .with_context(|| format!("cannot connect to PostgreSQL at {url}"))?;
        let settings = sqlx::query_as::<_, (String, String)>(
            "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name = ANY($1) ORDER BY name",
        )
        .bind(SERVER_SETTINGS)
        .fetch_all(&mut monitor)
        .await
        .context("reading the server's settings (pg_settings)")?;
        Ok(PgEnv {
            url: url.to_owned(),
            native: Arc::new(native),
            guest: Arc::new(guest),
            local_handoff: !args.no_local_handoff,
            guest_application: application_of(url).unwrap_or_else(|| "wardlock".to_owned()),
            monitor: tokio::sync::Mutex::new(monitor),
            connections: Mutex::default(),
            settings: (settings.into_iter())
                .map(|(name, value)| (name, value.into()))
                .collect(),
        })
    }

    /// The backend of `system`, if it has one.
    fn backend(&self, system: System) -> Option<&Arc<PostgresBackend>> {
        match system {
            System::PostgresNative => Some(&self.native),
            System::PostgresGuest => Some(&self.guest),
            _ => None,
        }
    }

    /// The `application_name` of `system`'s connections.
    fn application(&self, system: System) -> &str {
        match system {
            System::PostgresFloor => FLOOR_APPLICATION,
            System::PostgresNative => NATIVE_APPLICATION,
            _ => &self.guest_application,
        }
    }

    /// Counts `system`'s rows in `pg_stat_activity` now and records the most.
    pub(crate) async fn count_server_connections(&self, system: System) {
        let mut monitor = self.monitor.lock().await;
        let counted = sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
        )
        .bind(self.application(system))
        .fetch_one(&mut *monitor)
        .await;
        drop(monitor);
        match counted {
            Ok(count) => self.record(system, |c| c.server_max = c.server_max.max(count)),
            Err(error) => eprintln!("wardlock-bench: reading pg_stat_activity: {error:#}"),
        }
    }

    /// Records `open` lock connections of `system`.
    pub(crate) fn record_open(&self, system: System, open: usize) {
        self.record(system, |c| c.open_max = c.open_max.max(open));
    }

    fn record(&self, system: System, update: impl FnOnce(&mut PgConnections)) {
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        update(connections.entry(system).or_default());
    }

    /// What was recorded for `system` since the last call, and starts again.
    pub(crate) fn take_connections(&self, system: System) -> Option<PgConnections> {
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        connections.remove(&system)
    }

    /// Samples `system`'s backend's open connections every millisecond until
    /// the sampler is stopped; `None` for a system without a backend.
    pub(crate) fn sampler(&self, system: System) -> Option<Sampler> {
        let backend = self.backend(system)?.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut most = backend.open_connections();
            while !stopped.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(1)).await;
                most = most.max(backend.open_connections());
            }
            most
        });
        Some(Sampler { system, stop, task })
    }

    /// Releases what the backends hold and closes their connections.
    pub(crate) async fn shutdown(&self) {
        self.native.shutdown().await;
        self.guest.shutdown().await;
    }
}

/// A running sample of a backend's open connections ([`PgEnv::sampler`]).
pub(crate) struct Sampler {
    system: System,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<usize>,
}

impl Sampler {
    /// Stops sampling and records the most connections seen.
    pub(crate) async fn finish(self, pg: &PgEnv) {
        self.stop.store(true, Ordering::Relaxed);
        if let Ok(most) = self.task.await {
            pg.record_open(self.system, most);
        }
    }
}

/// The `application_name` a PostgreSQL URL gives, if any.
fn application_of(url: &str) -> Option<String> {
    let (_, query) = url.split_once('?')?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("application_name="))
        .map(str::to_owned)
}

/// `url` with `application_name` set to `name` (replacing one it gives).
fn with_application(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("application_name="))
        .collect();
    let named = format!("application_name={name}");
    pairs.push(&named);
    format!("{base}?{}", pairs.join("&"))
}

/// Shared state of a run.
pub(crate) struct Env {
    pub args: Args,
    pub memory: MemoryBackend,
    zk: Option<ZkEnv>,
    dir: tempfile::TempDir,
    memory_runner: Arc<Runner>,
    zk_runner: Option<Arc<Runner>>,
    etcd: Option<EtcdEnv>,
    etcd_runner: Option<Arc<Runner>>,
    pg: Option<PgEnv>,
    pg_runner: Option<Arc<Runner>>,
    /// The Curator JVM, started on first use.
    curator: Arc<tokio::sync::Mutex<Option<Driver>>>,
}

impl Env {
    /// Sets up the backends (ZooKeeper only when `zk_address` is given) and
    /// compiles the guest.
    ///
    /// # Errors
    /// When ZooKeeper cannot be reached or the data directory not created.
    pub(crate) async fn new(
        args: Args,
        zk_address: Option<&str>,
        etcd_address: Option<&str>,
        pg_url: Option<&str>,
    ) -> anyhow::Result<Env> {
        let dir = data_dir()?;
        let zk = match zk_address {
            Some(address) => Some(
                ZkEnv::connect(
                    address,
                    args.session_timeout(),
                    BackendOptions::from_args(&args),
                )
                .await?,
            ),
            None => None,
        };
        let etcd = match etcd_address {
            Some(address) => Some(EtcdEnv::connect(address, &args).await?),
            None => None,
        };
        let etcd_runner = etcd.as_ref().map(|etcd| {
            let backend: Arc<dyn LockBackend> = etcd.backend.clone();
            guest_runner(backend, dir.path())
        });
        let pg = match pg_url {
            Some(url) => Some(PgEnv::connect(url, &args).await?),
            None => None,
        };
        let pg_runner = pg.as_ref().map(|pg| {
            let backend: Arc<dyn LockBackend> = pg.guest.clone();
            guest_runner(backend, dir.path())
        });
        let memory = MemoryBackend::new();
        let memory_runner = guest_runner(Arc::new(memory.clone()), dir.path());
        let zk_runner = zk
            .as_ref()
            .map(|zk| guest_runner(Arc::new(zk.backend.clone()), dir.path()));
        Ok(Env {
            args,
            memory,
            zk,
            dir,
            memory_runner,
            zk_runner,
            etcd,
            etcd_runner,
            pg,
            pg_runner,
            curator: Arc::default(),
        })
    }

    /// The Curator driver (started on first use), held until the guard drops.
    ///
    /// # Errors
    /// When the run has no ZooKeeper or the JVM cannot start.
    pub(crate) async fn curator(
        &self,
    ) -> anyhow::Result<tokio::sync::OwnedMutexGuard<Option<Driver>>> {
        let mut driver = self.curator.clone().lock_owned().await;
        if driver.is_none() {
            let zk = self.zk()?;
            *driver = Some(Driver::start(&zk.address, zk.session_timeout)?);
        }
        Ok(driver)
    }

    /// The ZooKeeper side.
    ///
    /// # Errors
    /// When the run has no ZooKeeper.
    pub(crate) fn zk(&self) -> anyhow::Result<&ZkEnv> {
        self.zk.as_ref().context("this run has no ZooKeeper")
    }

    /// The etcd side.
    ///
    /// # Errors
    /// When the run has no etcd (`--etcd` not given).
    pub(crate) fn etcd(&self) -> anyhow::Result<&EtcdEnv> {
        self.etcd
            .as_ref()
            .context("this run has no etcd (pass --etcd)")
    }

    /// The PostgreSQL side.
    ///
    /// # Errors
    /// When the run has no PostgreSQL (`--postgres` not given).
    pub(crate) fn pg(&self) -> anyhow::Result<&PgEnv> {
        self.pg
            .as_ref()
            .context("this run has no PostgreSQL (pass --postgres)")
    }

    /// The directory counter files live in (guests see it as `/data`); see
    /// [`data_dir`].
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The runner of `bench-guest` instances for a guest system.
    ///
    /// # Errors
    /// For a native system, or a ZooKeeper system without ZooKeeper.
    pub(crate) fn guest_runner(&self, system: System) -> anyhow::Result<Arc<Runner>> {
        match system {
            System::MemoryGuest => Ok(self.memory_runner.clone()),
            System::ZooKeeperGuest => self.zk_runner.clone().context("this run has no ZooKeeper"),
            System::EtcdGuest => self.etcd_runner.clone().context("this run has no etcd"),
            System::PostgresGuest => self.pg_runner.clone().context("this run has no PostgreSQL"),
            other => bail!("{} is not a guest system", other.name()),
        }
    }

    /// Server counters now, if `system` uses ZooKeeper and counters work.
    pub(crate) fn zk_mark(&self, system: System) -> Option<ZkSnapshot> {
        let zk = self.zk.as_ref().filter(|zk| zk.counters)?;
        if !system.uses_zookeeper() {
            return None;
        }
        match zk.stats.snapshot() {
            Ok(snapshot) => Some(snapshot),
            Err(error) => {
                eprintln!("wardlock-bench: mntr failed: {error:#}");
                None
            }
        }
    }

    /// Server counter changes since `mark`.
    pub(crate) fn zk_since(&self, mark: Option<ZkSnapshot>) -> Option<ZkDelta> {
        let mark = mark?;
        let now = self.zk.as_ref()?.stats.snapshot().ok()?;
        Some(now.since(&mark))
    }
}

/// The data directory: on tmpfs (`/dev/shm`) when there is one, so the counter
/// checks measure exclusion rather than the disk (on ext4, rewriting a file in
/// place starts its writeback at once).
fn data_dir() -> anyhow::Result<tempfile::TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("wardlock-bench-");
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = builder.tempdir_in(shm)
    {
        return Ok(dir);
    }
    builder.tempdir().context("creating the data directory")
}

/// A runner of `bench-guest` on `backend`, with `dir` preopened as `/data`.
pub(crate) fn guest_runner(backend: Arc<dyn LockBackend>, dir: &Path) -> Arc<Runner> {
    runner_with(Guest::BenchGuest, guest_config(backend, dir))
}

/// How the bench runs `bench-guest` instances on `backend`.
pub(crate) fn guest_config(backend: Arc<dyn LockBackend>, dir: &Path) -> RunnerConfig {
    RunnerConfig {
        backend,
        preopens: vec![Preopen {
            host: dir.to_owned(),
            guest: GUEST_DATA_DIR.to_owned(),
        }],
        timeout: Some(GUEST_RUN_LIMIT),
        ..RunnerConfig::default()
    }
}

impl Env {
    /// A runner of `bench-guest` for `system` whose instances come from
    /// wasmtime's pooling allocator with room for `instances` at once: one
    /// reservation for all their memories and stacks, instead of several
    /// mappings each (10,000 instances on the default allocator pass the
    /// kernel's 65,530 mappings per process).
    ///
    /// # Errors
    /// When the pool cannot be reserved or the guest not compiled.
    pub(crate) fn pooled_guest_runner(
        &self,
        system: System,
        instances: u64,
    ) -> anyhow::Result<Arc<Runner>> {
        let slots = u32::try_from(instances + 64).context("too many instances")?;
        let mut pool = wasmtime::PoolingAllocationConfig::new();
        pool.total_component_instances(slots)
            .total_core_instances(slots.saturating_mul(4))
            .total_memories(slots)
            .total_tables(slots.saturating_mul(4))
            .total_stacks(slots)
            .max_memory_size(64 << 20);
        let runtime = Runtime::with_pooling(pool).context("reserving the instance pool")?;
        let component = runtime
            .compile(Path::new(Guest::BenchGuest.path()))
            .context("compiling bench-guest")?;
        let backend: Arc<dyn LockBackend> = match system {
            System::ZooKeeperGuest => Arc::new(self.zk()?.backend.clone()),
            System::EtcdGuest => self.etcd()?.backend.clone(),
            System::PostgresGuest => self.pg()?.guest.clone(),
            _ => Arc::new(self.memory.clone()),
        };
        let config = RunnerConfig {
            // What `runner_with` sets: the bench reads each guest's report.
            stdio: Stdio::Capture,
            ..guest_config(backend, self.dir())
        };
        Ok(Arc::new(Runner::new(
            &runtime,
            &component,
            &Guest::BenchGuest.file_name(),
            config,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn backends_cache_as_the_command_line_does_unless_told_not_to() {
        let args = Args::parse_from(["wardlock-bench"]);
        assert_eq!(limits(&args), LocalHandoff::cached());
        let options = BackendOptions::from_args(&args);
        assert!(options.lock_cache());
        assert!(!options.uncached().lock_cache());
        assert_eq!(options.uncached().limits, LocalHandoff::default());

        let args = Args::parse_from(["wardlock-bench", "--no-lock-cache", "--handoff-max", "4"]);
        let expected = LocalHandoff {
            max_handoffs: 4,
            ..LocalHandoff::default()
        };
        assert_eq!(limits(&args), expected);
        assert!(!BackendOptions::from_args(&args).lock_cache());

        // No hand-off, nothing to cache.
        let args = Args::parse_from(["wardlock-bench", "--no-local-handoff"]);
        assert!(!BackendOptions::from_args(&args).lock_cache());
    }

    #[test]
    fn the_native_backend_names_its_connections_in_the_url() {
        let url = "postgres://wardlock@127.0.0.1:5432/wardlock";
        assert_eq!(application_of(url), None);
        let named = with_application(url, NATIVE_APPLICATION);
        assert_eq!(
            named,
            "postgres://wardlock@127.0.0.1:5432/wardlock?application_name=wardlock-bench-native"
        );
        assert_eq!(application_of(&named).as_deref(), Some(NATIVE_APPLICATION));
        let with_query = "postgres://app@db/app?sslmode=disable&application_name=mine";
        assert_eq!(application_of(with_query).as_deref(), Some("mine"));
        assert_eq!(
            with_application(with_query, "other"),
            "postgres://app@db/app?sslmode=disable&application_name=other"
        );
    }
}
