//! Test harness: guest components built by `build.rs`, one shared engine, and
//! helpers to run guests against a backend and wait for lock events; real
//! ZooKeeper servers and a controllable TCP proxy; the backend conformance suite;
//! the `wardlock-bench` benchmark (`bench`, run by `src/bin/wardlock-bench.rs`).

pub mod bench;
pub mod conformance;
pub mod interop;
pub mod probe;
pub mod proxy;
pub mod serve;
pub mod zookeeper;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use wardlock_host::runner::{InstanceReport, Runner, RunnerConfig, Runtime, Stdio};
use wardlock_host::{LockName, LockPolicy, MemoryBackend};
use wasmtime::component::Component;

/// The guests `plugins/build.sh` produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Guest {
    Counter,
    ReadersWriters,
    Misbehave,
    Lockctl,
    BenchGuest,
    /// `plugins/c/counter.c`: the counter in C (see `plugins/README.md`).
    CounterC,
    /// `plugins/python/counter.py`.
    CounterPython,
    /// `plugins/js/counter.js`.
    CounterJs,
    /// `plugins/c/readers_writers.c`.
    ReadersWritersC,
    /// `plugins/python/readers_writers.py`.
    ReadersWritersPython,
    /// `plugins/js/readers-writers.js`.
    ReadersWritersJs,
    /// `plugins/http-counter`: the `wardlock serve` example.
    HttpCounter,
    /// `plugins/js/http-counter.js`: the `wardlock serve` example in JavaScript.
    HttpCounterJs,
}

impl Guest {
    /// The component file.
    ///
    /// # Panics
    /// When the guest was not built: its language's toolchain is missing (see
    /// `tests/build.rs`).
    pub fn path(self) -> &'static str {
        let built = match self {
            Guest::Counter => option_env!("WARDLOCK_GUEST_COUNTER"),
            Guest::ReadersWriters => option_env!("WARDLOCK_GUEST_READERS_WRITERS"),
            Guest::Misbehave => option_env!("WARDLOCK_GUEST_MISBEHAVE"),
            Guest::Lockctl => option_env!("WARDLOCK_GUEST_LOCKCTL"),
            Guest::BenchGuest => option_env!("WARDLOCK_GUEST_BENCH_GUEST"),
            Guest::CounterC => option_env!("WARDLOCK_GUEST_COUNTER_C"),
            Guest::CounterPython => option_env!("WARDLOCK_GUEST_COUNTER_PYTHON"),
            Guest::CounterJs => option_env!("WARDLOCK_GUEST_COUNTER_JS"),
            Guest::ReadersWritersC => option_env!("WARDLOCK_GUEST_READERS_WRITERS_C"),
            Guest::ReadersWritersPython => option_env!("WARDLOCK_GUEST_READERS_WRITERS_PYTHON"),
            Guest::ReadersWritersJs => option_env!("WARDLOCK_GUEST_READERS_WRITERS_JS"),
            Guest::HttpCounter => option_env!("WARDLOCK_GUEST_HTTP_COUNTER"),
            Guest::HttpCounterJs => option_env!("WARDLOCK_GUEST_HTTP_COUNTER_JS"),
        };
        built.unwrap_or_else(|| {
            panic!(
                "guest {self:?} was not built because its toolchain is missing: \
                 run plugins/install-toolchains.sh, then cargo test again"
            )
        })
    }

    fn file_name(self) -> String {
        std::path::Path::new(self.path())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The engine shared by every test in this process.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new().expect("engine"))
}

/// `guest` compiled once per test process.
pub fn component(guest: Guest) -> Component {
    static CACHE: OnceLock<Mutex<HashMap<Guest, Component>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(guest)
        .or_insert_with(|| {
            runtime()
                .compile(std::path::Path::new(guest.path()))
                .expect("compile guest")
        })
        .clone()
}

/// A runner for `guest` on `backend`, capturing stdio, with `policy` and `timeout`.
pub fn runner(
    guest: Guest,
    backend: &MemoryBackend,
    policy: LockPolicy,
    timeout: Option<Duration>,
) -> Arc<Runner> {
    runner_with(
        guest,
        RunnerConfig {
            backend: Arc::new(backend.clone()),
            policy: Arc::new(policy),
            timeout,
            ..RunnerConfig::default()
        },
    )
}

/// A runner for `guest` with `config`, capturing stdio.
pub fn runner_with(guest: Guest, config: RunnerConfig) -> Arc<Runner> {
    let config = RunnerConfig {
        stdio: Stdio::Capture,
        ..config
    };
    Arc::new(Runner::new(runtime(), &component(guest), &guest.file_name(), config).expect("runner"))
}

/// Runs one `lockctl` instance with `commands` and default policy.
pub async fn lockctl(backend: &MemoryBackend, commands: &[&str]) -> InstanceReport {
    lockctl_with(backend, LockPolicy::new(), None, commands).await
}

/// Runs one `lockctl` instance with `commands`, `policy` and `timeout`.
pub async fn lockctl_with(
    backend: &MemoryBackend,
    policy: LockPolicy,
    timeout: Option<Duration>,
    commands: &[&str],
) -> InstanceReport {
    let args: Vec<String> = commands.iter().map(|c| c.to_string()).collect();
    runner(Guest::Lockctl, backend, policy, timeout)
        .run(0, &args)
        .await
}

/// The output lines of a report.
pub fn lines(report: &InstanceReport) -> Vec<String> {
    report.stdout_text().lines().map(str::to_owned).collect()
}

/// Parses `h<N> token=<T>` and returns T.
pub fn token_of(line: &str) -> u64 {
    line.split_once("token=")
        .and_then(|(_, t)| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no token in {line:?}"))
}

/// A validated name (panics on invalid input: test constants only).
pub fn name(s: &str) -> LockName {
    LockName::new(s).expect("valid test lock name")
}

/// Waits, at most 30 s (a hang guard, not a synchronisation), until the queue of
/// `lock` satisfies `predicate`.
pub async fn wait_queue(
    backend: &MemoryBackend,
    lock: &str,
    predicate: impl FnMut(&[wardlock_host::backend::memory::QueueEntry]) -> bool,
) {
    let lock = name(lock);
    tokio::time::timeout(Duration::from_secs(30), backend.wait_for(&lock, predicate))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "queue of {lock} never reached the expected state: {:?}",
                backend.snapshot(&lock)
            )
        });
}

/// Waits until `lock` has exactly `holders` granted and `waiters` waiting entries.
pub async fn wait_counts(backend: &MemoryBackend, lock: &str, holders: usize, waiters: usize) {
    wait_queue(backend, lock, |q| {
        q.iter().filter(|e| e.token.is_some()).count() == holders
            && q.iter().filter(|e| e.token.is_none()).count() == waiters
    })
    .await;
}

/// Runs one `lockctl` instance with `commands` in the background, for tests that
/// act while the guest holds or waits.
pub fn spawn_lockctl(
    backend: &MemoryBackend,
    commands: &[&str],
) -> tokio::task::JoinHandle<InstanceReport> {
    let backend = backend.clone();
    let commands: Vec<String> = commands.iter().map(|c| c.to_string()).collect();
    tokio::spawn(async move {
        let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
        lockctl(&backend, &commands).await
    })
}
