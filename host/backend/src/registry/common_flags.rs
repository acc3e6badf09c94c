//! The engine-neutral flags of `run`, `serve` and `status`: which engine, where
//! its names live, how long its session lasts, host-local hand-off. Every
//! engine reads what applies to it; engines add their own flags beside these.

use std::time::Duration;

use anyhow::bail;
use clap::Args;

use crate::handoff::LocalHandoff;

/// Which lock engine guests lock on, and what every remote engine shares.
#[derive(Debug, Args)]
pub struct CommonFlags {
    /// Lock engine (default: memory, or the engine a flag of its own names:
    /// --zookeeper, --etcd).
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,

    /// Root under which lock names live in the lock service (ZooKeeper:
    /// `<root>/<name>`; etcd: the key prefix; the memory engine keeps one
    /// namespace per host).
    #[arg(long, value_name = "PATH", default_value = "/wardlock")]
    pub root: String,

    /// Session timeout in seconds: how long after this host dies its locks
    /// stay held (ZooKeeper's session timeout; etcd's lease TTL, whole
    /// seconds).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub session_timeout: f64,

    /// How this host's guests share a lock.
    #[command(flatten)]
    pub handoff: HandoffFlags,

    /// Exit at start when the lock service cannot be reached. Without it the
    /// host starts anyway (not ready: lock requests fail at once with
    /// `unavailable`) and connects in the background as soon as the service
    /// answers, so hosts and lock service may start in any order.
    #[arg(long)]
    pub require_backend: bool,
}

impl CommonFlags {
    /// `--session-timeout` as a duration.
    ///
    /// # Errors
    /// It is not a positive number of seconds.
    pub fn session_timeout(&self) -> anyhow::Result<Duration> {
        positive_secs("--session-timeout", self.session_timeout)
    }
}

/// Host-local hand-off on a remote engine (of `run` and `serve`).
#[derive(Debug, Args)]
pub struct HandoffFlags {
    /// Let every guest queue on the lock service on its own, instead of the
    /// host queueing once per lock and handing the grant among its guests in
    /// memory. On etcd (one key per host and lock, under the host's lease) the
    /// host then gives its key up after every local holder.
    #[arg(long)]
    pub no_local_handoff: bool,

    /// Local hand-offs still made once a guest of another host queues behind
    /// this host's node (the fairness bound).
    #[arg(long, value_name = "N", default_value_t = LocalHandoff::default().max_handoffs)]
    pub handoff_max: u32,

    /// How long after another host's guest queued local hand-offs may go on.
    #[arg(long, value_name = "MS", default_value_t = 10)]
    pub handoff_max_ms: u64,

    /// Keep this host's node this long after the last local release, so an
    /// immediate re-acquire on this host costs no round trip (0: no linger).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub linger_ms: u64,
}

impl HandoffFlags {
    /// The hand-off limits these flags describe; `None` when turned off.
    pub fn limits(&self) -> Option<LocalHandoff> {
        (!self.no_local_handoff).then(|| LocalHandoff {
            max_handoffs: self.handoff_max,
            max_time: Duration::from_millis(self.handoff_max_ms),
            linger: Duration::from_millis(self.linger_ms),
        })
    }

    /// The limits for an engine that always queues one node per host and
    /// lock (etcd): turned off, the node goes after every local holder.
    pub fn limits_or_none(&self) -> LocalHandoff {
        self.limits().unwrap_or(LocalHandoff::NONE)
    }
}

/// `secs` as a duration, or an error naming `flag` unless it is positive and finite.
///
/// # Errors
/// `secs` is zero, negative, infinite or not a number.
pub fn positive_secs(flag: &str, secs: f64) -> anyhow::Result<Duration> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        bail!("{flag} must be a positive number of seconds, got {secs}")
    }
}
