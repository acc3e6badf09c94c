//! Command-line arguments of `wardlock-bench`.

use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Parser, ValueEnum};

use super::systems::System;
use super::workloads::Workload;

/// Measures wardlock against the least work ZooKeeper itself needs for a lock
/// (`zk-floor`), side by side in one run. Results go to stdout (a table, or
/// JSON lines with --json); progress goes to stderr. See tests/BENCHMARKS.md.
#[derive(Debug, Clone, Parser)]
#[command(name = "wardlock-bench", version)]
pub(crate) struct Args {
    /// ZooKeeper server to measure on (one server: its `mntr` counters are
    /// read). Without it, a private server is started on a free loopback port
    /// and stopped at the end.
    #[arg(long, value_name = "HOST:PORT")]
    pub zookeeper: Option<String>,

    /// Also measure on etcd (the etcd-floor, etcd-native and etcd-guest
    /// systems): on the cluster at HOST:PORT[,...], or, given without a
    /// value, on a private server started on a free loopback port.
    #[arg(long, value_name = "HOST:PORT", num_args = 0..=1, default_missing_value = PRIVATE)]
    pub etcd: Option<String>,

    /// Also measure on PostgreSQL (the postgres-floor, postgres-native and
    /// postgres-guest systems): on the server at URL
    /// (`postgres://ROLE@HOST:PORT/DATABASE`, a role that may create
    /// wardlock's schema), or, given without a value, on a private server
    /// started on a free loopback port.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = PRIVATE)]
    pub postgres: Option<String>,

    /// Workloads to run, comma-separated.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "all",
        value_parser = pick::<Workload>()
    )]
    pub workloads: Vec<Pick<Workload>>,

    /// Systems to measure, comma-separated.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "all",
        value_parser = pick::<System>()
    )]
    pub systems: Vec<Pick<System>>,

    /// Concurrent clients in `contended`, `rw` and `spread`; waiters in
    /// `herd`; guests per host process in `hosts`.
    #[arg(long, value_name = "K", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub clients: u64,

    /// Acquire+release pairs per client (see BENCHMARKS.md for the few
    /// workloads that scale it).
    #[arg(long, value_name = "M", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub ops: u64,

    /// ZooKeeper session timeout of wardlock's backend, in seconds (also
    /// etcd's lease TTL and PostgreSQL's session timeout).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub session_timeout: u64,

    /// Guest instances of the `scale` workload, queued at once on N / 10 lock
    /// names (at most 1,000); run it at 100, 1,000 and 10,000 for the curve.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub instances: u64,

    /// Host processes of the `hosts` workload, each running `--clients` guests
    /// on the one lock (Curator runs hosts × clients clients).
    #[arg(long, value_name = "H", default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub hosts: u64,

    /// Rounds of each engine and variant in `lock-set` (each: 3 hosts × 2
    /// guests under a nemesis, about 10 s).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub rounds: u64,

    /// Internal: run as one host process of the `hosts` workload, with
    /// guests' counter files in DIR (commands on stdin, results on stdout).
    #[arg(long, value_name = "DIR", hide = true)]
    pub host_child: Option<std::path::PathBuf>,

    /// Run wardlock's ZooKeeper systems without host-local hand-off (every
    /// client queues on its own node, the library's default), and the etcd
    /// and PostgreSQL ones with `LocalHandoff::NONE` (no local grant once
    /// another host waits). Without it they run as `wardlock run` and
    /// `serve` do: hand-off on, default limits, lock caching on ZooKeeper and
    /// etcd (see `--no-lock-cache`).
    #[arg(long)]
    pub no_local_handoff: bool,

    /// Run wardlock's ZooKeeper and etcd systems without lock caching
    /// (`LocalHandoff::default()`: a host gives its node up as soon as its
    /// last local holder releases), as `wardlock run --no-lock-cache` does.
    /// Without it they cache as `wardlock run` and `serve` do by default
    /// (`LocalHandoff::cached()`: the node stays 5 s after the last release,
    /// until another host queues for the lock). PostgreSQL never caches here
    /// (the command line does not either unless told `--linger-ms`).
    #[arg(long)]
    pub no_lock_cache: bool,

    /// Local grants a host still makes once another host waits (the product's
    /// `--handoff-max`; default: the product's default).
    #[arg(long, value_name = "N")]
    pub handoff_max: Option<u32>,

    /// How long a host goes on handing off once another host waits, ms (the
    /// product's `--handoff-max-ms`; default: the product's default).
    #[arg(long, value_name = "MS")]
    pub handoff_max_ms: Option<u64>,

    /// ZooKeeper sessions of wardlock's backend (its session pool: lock names
    /// spread over them by hash): N (1 to 64, opened at start) or auto (as
    /// `wardlock run`: up to 8, each opened on first use).
    #[arg(long, value_name = "N|auto", default_value = "auto", value_parser = parse_zk_sessions)]
    pub zk_sessions: ZkSessions,

    /// Print one JSON object per result line instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// The session timeout as a duration.
    pub(crate) fn session_timeout(&self) -> Duration {
        Duration::from_secs(self.session_timeout)
    }

    /// The selected workloads, in the canonical order, without repeats.
    pub(crate) fn selected_workloads(&self) -> Vec<Workload> {
        selected(&self.workloads)
    }

    /// The selected systems, in the canonical order, without repeats; the
    /// etcd systems only with `--etcd`, the PostgreSQL ones only with
    /// `--postgres`.
    pub(crate) fn selected_systems(&self) -> Vec<System> {
        selected(&self.systems)
            .into_iter()
            .filter(|s| self.etcd.is_some() || !s.uses_etcd())
            .filter(|s| self.postgres.is_some() || !s.uses_postgres())
            .collect()
    }
}

/// `--etcd` or `--postgres` without a value: start a private server.
pub(crate) const PRIVATE: &str = "private";

/// A `--workloads` or `--systems` item: `all`, or one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick<T> {
    All,
    One(T),
}

/// Parses a [`Pick`]: `all` or one of `T`'s value names, offered in that order
/// (`--help` lists them inline, without the variants' docs).
fn pick<T: ValueEnum + Send + Sync + 'static>() -> impl TypedValueParser<Value = Pick<T>> {
    let values = T::value_variants()
        .iter()
        .filter_map(ValueEnum::to_possible_value)
        .map(|value| value.help(None::<&'static str>));
    PossibleValuesParser::new(std::iter::once(PossibleValue::new("all")).chain(values))
        .map(|name| T::from_str(&name, false).map_or(Pick::All, Pick::One))
}

/// The variants of `T` that `picks` name, in declaration order, without repeats.
fn selected<T: ValueEnum + Copy + PartialEq>(picks: &[Pick<T>]) -> Vec<T> {
    T::value_variants()
        .iter()
        .copied()
        .filter(|v| picks.iter().any(|p| *p == Pick::All || *p == Pick::One(*v)))
        .collect()
}

/// `value`'s name on the command line, which is also its name in the output.
pub(crate) fn value_name<T: ValueEnum>(value: &T) -> String {
    value
        .to_possible_value()
        .expect("no value is skipped")
        .get_name()
        .to_owned()
}

/// `--zk-sessions`: how many ZooKeeper sessions wardlock's backend spreads
/// its locks over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ZkSessions {
    /// Up to `wardlock_zookeeper::AUTO_SESSIONS`, each opened on first use
    /// (the default of `wardlock run` and `serve`).
    Auto,
    /// This many, opened at start.
    Fixed(usize),
}

impl std::fmt::Display for ZkSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZkSessions::Auto => f.write_str("auto"),
            ZkSessions::Fixed(n) => write!(f, "{n}"),
        }
    }
}

fn parse_zk_sessions(text: &str) -> Result<ZkSessions, String> {
    if text == "auto" {
        return Ok(ZkSessions::Auto);
    }
    match text.parse::<usize>() {
        Ok(n) if (1..=64).contains(&n) => Ok(ZkSessions::Fixed(n)),
        _ => Err(format!("expected 1 to 64 or auto, not {text:?}")),
    }
}
