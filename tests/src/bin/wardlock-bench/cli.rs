//! Command-line arguments of `wardlock-bench`.

use std::time::Duration;

use clap::{Parser, ValueEnum};

use super::systems::System;
use super::workloads::Workload;

/// Measures wardlock against the least work ZooKeeper itself needs for a lock
/// (`zk-floor`), side by side in one run. Results go to stdout (a table, or
/// JSON lines with --json); progress goes to stderr. See tests/BENCHMARKS.md.
#[derive(Debug, Clone, Parser)]
#[command(name = "wardlock-bench", version)]
pub struct Args {
    /// ZooKeeper server to measure on (one server: its `mntr` counters are
    /// read). Without it, a private server is started on a free loopback port
    /// and stopped at the end.
    #[arg(long, value_name = "HOST:PORT")]
    pub zookeeper: Option<String>,

    /// Workloads to run, comma-separated.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "all"
    )]
    pub workloads: Vec<WorkloadArg>,

    /// Systems to measure, comma-separated.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "all"
    )]
    pub systems: Vec<SystemArg>,

    /// Concurrent clients in `contended` and `rw`; waiters in `herd`.
    #[arg(long, value_name = "K", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub clients: u64,

    /// Acquire+release pairs per client (see BENCHMARKS.md for the few
    /// workloads that scale it).
    #[arg(long, value_name = "M", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub ops: u64,

    /// ZooKeeper session timeout of wardlock's backend, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub session_timeout: u64,

    /// Print one JSON object per result line instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// The session timeout as a duration.
    pub fn session_timeout(&self) -> Duration {
        Duration::from_secs(self.session_timeout)
    }

    /// The selected workloads, in the canonical order, without repeats.
    pub fn selected_workloads(&self) -> Vec<Workload> {
        Workload::ALL
            .into_iter()
            .filter(|w| {
                self.workloads
                    .iter()
                    .any(|a| matches!(a, WorkloadArg::All) || a.workload() == Some(*w))
            })
            .collect()
    }

    /// The selected systems, in the canonical order, without repeats.
    pub fn selected_systems(&self) -> Vec<System> {
        System::ALL
            .into_iter()
            .filter(|s| {
                self.systems
                    .iter()
                    .any(|a| matches!(a, SystemArg::All) || a.system() == Some(*s))
            })
            .collect()
    }
}

/// A `--workloads` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkloadArg {
    All,
    Uncontended,
    Contended,
    Rw,
    Herd,
    ReleaseOnDeath,
    HostCall,
    Instantiate,
    Scale,
}

impl WorkloadArg {
    fn workload(self) -> Option<Workload> {
        Some(match self {
            WorkloadArg::All => return None,
            WorkloadArg::Uncontended => Workload::Uncontended,
            WorkloadArg::Contended => Workload::Contended,
            WorkloadArg::Rw => Workload::Rw,
            WorkloadArg::Herd => Workload::Herd,
            WorkloadArg::ReleaseOnDeath => Workload::ReleaseOnDeath,
            WorkloadArg::HostCall => Workload::HostCall,
            WorkloadArg::Instantiate => Workload::Instantiate,
            WorkloadArg::Scale => Workload::Scale,
        })
    }
}

/// A `--systems` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SystemArg {
    All,
    ZkFloor,
    WardlockNative,
    WardlockGuest,
    MemoryNative,
    MemoryGuest,
}

impl SystemArg {
    fn system(self) -> Option<System> {
        Some(match self {
            SystemArg::All => return None,
            SystemArg::ZkFloor => System::ZkFloor,
            SystemArg::WardlockNative => System::WardlockNative,
            SystemArg::WardlockGuest => System::WardlockGuest,
            SystemArg::MemoryNative => System::MemoryNative,
            SystemArg::MemoryGuest => System::MemoryGuest,
        })
    }
}
