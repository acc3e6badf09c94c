//! What `wardlock serve` serves, however it was described (flags or a config file).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use wardlock_host::keyvalue::KvBuckets;
use wardlock_host::policy::LockPolicy;
use wardlock_host::runner::{DeclaredLock, FileIo, OutboundPolicy, Preopen};

use std::sync::Arc;

use crate::registry::EngineConfig;

/// Default per-request timeout.
pub(super) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default number of requests served at once (instances alive); more wait
/// for a slot.
pub(super) const DEFAULT_MAX_CONCURRENT: usize = 1000;
/// Most requests served at once that `--max-concurrent-requests` accepts.
pub(super) const MAX_CONCURRENT_LIMIT: usize = 100_000;
/// Default time in-flight requests get to finish after SIGTERM/SIGINT.
pub(super) const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The whole server.
#[derive(Debug)]
pub(super) struct ServePlan {
    /// Where requests are served.
    pub listen: SocketAddr,
    /// Where `/metrics` and `/healthz` are served, if anywhere.
    pub admin: Option<SocketAddr>,
    /// The bearer token the admin endpoints require, if any (read from a
    /// file: `--admin-token-file`, the config file's `admin_token_file`).
    pub admin_token: Option<wardlock_host::secret::Secret>,
    /// How long in-flight requests may finish after a stop signal.
    pub shutdown_grace: Duration,
    /// Requests served at once, over all plugins: the instance pool is sized
    /// for them, and a request beyond them waits for a slot (within its
    /// request timeout) instead of failing.
    pub max_concurrent: usize,
    /// Backends by label.
    pub backends: BTreeMap<String, Arc<dyn EngineConfig>>,
    /// Plugins, each on a route prefix.
    pub plugins: Vec<PluginPlan>,
    /// Background commands run on exactly one host at a time (`[[singletons]]`).
    pub singletons: Vec<SingletonPlan>,
}

/// A WASI command run beside the server while this host leads its
/// election: every server configured with the same singleton elects one
/// leader, which runs the command; the others stand by (and are ready).
#[derive(Debug)]
pub(super) struct SingletonPlan {
    /// The election's name (a lock name).
    pub name: wardlock_host::name::LockName,
    /// What this host proclaims as its leader.
    pub value: String,
    /// The component file (a WASI command).
    pub component: PathBuf,
    /// Label of the backend it elects on.
    pub backend: String,
    /// The command's arguments.
    pub args: Vec<String>,
    /// Directories it sees.
    pub preopens: Vec<Preopen>,
    /// Its environment.
    pub env: Vec<(String, String)>,
    /// Where its file operations run.
    pub file_io: FileIo,
    /// Lock name grants and handle cap.
    pub policy: LockPolicy,
}

/// One plugin: a component on a route prefix, with its grants and limits.
#[derive(Debug)]
pub(super) struct PluginPlan {
    /// Label in logs, metrics and lock owner descriptions.
    pub name: String,
    /// Requests whose path starts with this prefix (segment-wise) go here.
    pub route: String,
    /// The component file.
    pub component: PathBuf,
    /// Label of the backend it locks on.
    pub backend: String,
    /// Lock name grants and handle cap.
    pub policy: LockPolicy,
    /// Linear-memory limit per request instance, bytes.
    pub memory_limit: usize,
    /// Per-request timeout.
    pub request_timeout: Duration,
    /// Hold lease: longest a request may hold any lock.
    pub max_hold: Option<Duration>,
    /// Directories the guest sees.
    pub preopens: Vec<Preopen>,
    /// Guest environment.
    pub env: Vec<(String, String)>,
    /// Where the guest's file operations run.
    pub file_io: FileIo,
    /// Where the guest may send HTTP requests.
    pub outbound: OutboundPolicy,
    /// Locks each request holds before its guest sees it (`hold`).
    pub hold: Vec<DeclaredLock>,
    /// The `wasi:keyvalue` buckets its guests may open (`kv_buckets`).
    pub kv_buckets: KvBuckets,
}

/// Whether `path` falls under `route` (segment-wise: `/api` covers `/api` and
/// `/api/x`, not `/apix`; `/` covers everything).
pub(super) fn route_matches(route: &str, path: &str) -> bool {
    let route = route.trim_end_matches('/');
    route.is_empty()
        || path == route
        || path
            .strip_prefix(route)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Checks a route prefix.
///
/// # Errors
/// What is wrong with it.
pub(super) fn check_route(route: &str) -> Result<(), String> {
    if !route.starts_with('/') {
        return Err(format!("route {route:?} must start with '/'"));
    }
    if route.contains(['?', '#', ' ']) {
        return Err(format!("route {route:?} must be a plain path prefix"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_segment_wise() {
        assert!(route_matches("/", "/anything/at/all"));
        assert!(route_matches("/api", "/api"));
        assert!(route_matches("/api/", "/api/x"));
        assert!(!route_matches("/api", "/apix"));
        assert!(!route_matches("/api", "/"));
    }
}
