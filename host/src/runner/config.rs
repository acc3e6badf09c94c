//! What a runner gives each guest instance.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::declared::DeclaredLock;
use super::outbound::OutboundPolicy;
use crate::backend::LockBackend;
use crate::backend::memory::MemoryBackend;
use crate::keyvalue::KvBuckets;
use crate::locks::LockTable;
use crate::policy::LockPolicy;

/// The default per-instance linear-memory limit: 512 MiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 512 << 20;

/// Where guest stdout and stderr go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdio {
    /// Straight to the host's stdout and stderr.
    Inherit,
    /// Into memory, returned in the [`super::InstanceReport`] (up to 16 MiB each).
    Capture,
}

/// A host directory made visible to guests.
#[derive(Debug, Clone)]
pub struct Preopen {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the guest sees it.
    pub guest: String,
}

impl Preopen {
    /// Parses `HOST[::GUEST]` as `wasmtime run --dir` does; without `::GUEST` the
    /// guest sees the directory under the same path.
    pub fn parse(spec: &str) -> Preopen {
        match spec.split_once("::") {
            Some((host, guest)) => Preopen {
                host: host.into(),
                guest: guest.to_owned(),
            },
            None => Preopen {
                host: spec.into(),
                guest: spec.to_owned(),
            },
        }
    }
}

/// Everything a runner needs besides the component.
#[derive(Clone)]
pub struct RunnerConfig {
    /// The lock service guests use.
    pub backend: Arc<dyn LockBackend>,
    /// Name grants and handle caps for this plugin.
    pub policy: Arc<LockPolicy>,
    /// Wall-clock limit per instance, running or parked in `acquire`.
    pub timeout: Option<Duration>,
    /// Linear-memory limit per instance, in bytes.
    pub memory_limit: usize,
    /// Directories the guest may open.
    pub preopens: Vec<Preopen>,
    /// Environment variables the guest sees.
    pub env: Vec<(String, String)>,
    /// Where guest stdout and stderr go.
    pub stdio: Stdio,
    /// Where guests may send HTTP requests (default: nowhere).
    pub outbound: OutboundPolicy,
    /// Longest time an instance may hold any lock; past it the lock is taken
    /// back (its handle reports `lost`) and the instance is stopped.
    pub max_hold: Option<Duration>,
    /// The host's lock table: each instance's session is tracked there (who
    /// holds and waits for what, for the admin page) and its waits are
    /// deadlock-checked against every other session of the table. Share one
    /// table among the runners of a host (a clone), so a cycle between
    /// plugins is found. `None` tracks nothing; a backend already wrapped by
    /// the table ([`LockTable::wrap`]) is not tracked twice.
    pub locks: Option<LockTable>,
    /// Where the guest's file operations run ([`FileIo`]).
    pub file_io: FileIo,
    /// Locks every instance holds for its whole life ([`DeclaredLock`]; the
    /// command runner only: `wardlock run --hold`).
    pub hold: Vec<DeclaredLock>,
    /// The `wasi:keyvalue` buckets guests may open (`--kv-bucket`; default:
    /// `default` alone).
    pub kv_buckets: KvBuckets,
}

/// Where a guest's file operations (in its `--dir` directories) run.
///
/// `wasmtime-wasi` hands each one to Tokio's blocking pool by default and
/// waits for it there: on a local disk that hand-over costs many times the
/// operation itself, and a guest that does file work while it holds a lock
/// holds the lock that much longer. 16 guests passing one lock with four file
/// operations each made 8,500 grants a second through the pool and 72,000 on
/// the thread (`wardlock-bench --workloads contended --clients 16`,
/// `memory-guest`, this machine).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FileIo {
    /// On the thread that runs the guest (the default): for local
    /// directories, where an operation takes microseconds.
    #[default]
    OnThread,
    /// On Tokio's blocking pool: for directories on a slow or network
    /// filesystem, where one operation could hold a runtime thread (and the
    /// lock service's heartbeats waiting for it) too long.
    Pooled,
}

impl FileIo {
    /// Whether `wasmtime-wasi` may block the guest's thread on a file
    /// operation (`WasiCtxBuilder::allow_blocking_current_thread`).
    pub fn blocks_the_thread(self) -> bool {
        self == FileIo::OnThread
    }
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            backend: Arc::new(MemoryBackend::new()),
            policy: Arc::new(LockPolicy::new()),
            timeout: None,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            preopens: Vec::new(),
            env: Vec::new(),
            stdio: Stdio::Inherit,
            outbound: OutboundPolicy::default(),
            max_hold: None,
            locks: Some(LockTable::for_this_host()),
            file_io: FileIo::default(),
            hold: Vec::new(),
            kv_buckets: KvBuckets::default(),
        }
    }
}
