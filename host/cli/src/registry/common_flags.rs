//! The engine-neutral flags of `run`, `serve` and `status` that are no
//! engine's setting: which engine, and whether it must be reachable at start.
//! (The settings every remote engine shares, `--root`, `--session-timeout`
//! and hand-off, come from `REMOTE_SETTINGS`; each engine's own from the
//! engine.)

use clap::Args;

/// Which lock engine guests lock on.
#[derive(Debug, Args)]
pub struct CommonFlags {
    /// Lock engine (default: memory, or the engine a flag of its own names:
    /// --zookeeper, --etcd, --postgres).
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,

    /// Exit at start when the lock service cannot be reached. Without it the
    /// host starts anyway (not ready: lock requests fail at once with
    /// `unavailable`) and connects in the background as soon as the service
    /// answers, so hosts and lock service may start in any order.
    #[arg(long)]
    pub require_backend: bool,
}
