//! The workloads: what each measures is documented in its module and in
//! tests/BENCHMARKS.md.

mod cached_handover;
mod cancelled_wait;
mod exclusion;
mod fairness;
mod fresh_floor;
mod guarded;
mod herd;
mod host_call;
mod hosts;
mod instantiate;
mod lock_set;
mod release_on_death;
mod rounds;
mod scale;
mod spread;
mod uncontended;
mod wit_v3;

use clap::ValueEnum;
use wardlock_host::LockName;

use super::cli::value_name;
use super::env::Env;
use super::report::Row;
use super::systems::System;

/// A workload; its value name (`--workloads`, the output) is the variant's
/// name in kebab case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub(crate) enum Workload {
    Uncontended,
    Contended,
    Rw,
    Herd,
    ReleaseOnDeath,
    HostCall,
    Instantiate,
    Scale,
    Spread,
    Fairness,
    Hosts,
    /// Guarded put against a plain write of the same size (issue 35).
    Guarded,
    /// Jepsen's lock-set under pauses and kills (issue 35).
    LockSet,
    /// A waiter on another host behind a cached, released lock (issue 39).
    CachedHandover,
    /// `wardlock:lock@0.3.0` against 0.2.2, and 64 locks at once (issue 50).
    WitV3,
}

impl Workload {
    /// The name in the output and in `--workloads`.
    pub(crate) fn name(self) -> String {
        value_name(&self)
    }

    /// The systems this workload measures, in output order.
    pub(crate) fn systems(self) -> &'static [System] {
        match self {
            Workload::Uncontended | Workload::Contended | Workload::Rw | Workload::Spread => {
                System::value_variants()
            }
            Workload::Herd => &[
                System::ZkFloor,
                System::ZooKeeperNative,
                System::ZooKeeperGuest,
                System::MemoryNative,
                System::MemoryGuest,
            ],
            Workload::ReleaseOnDeath | Workload::Scale => {
                &[System::ZooKeeperGuest, System::MemoryGuest]
            }
            Workload::HostCall => &[System::MemoryNative, System::MemoryGuest],
            Workload::Instantiate => &[System::MemoryGuest],
            Workload::Fairness => &[System::ZooKeeperNative],
            Workload::Hosts => &[
                System::Curator,
                System::ZooKeeperGuest,
                System::EtcdFloor,
                System::EtcdGuest,
            ],
            Workload::Guarded => &[
                System::ZkFloor,
                System::ZooKeeperNative,
                System::EtcdFloor,
                System::EtcdNative,
            ],
            Workload::LockSet => &[System::ZooKeeperGuest, System::EtcdGuest],
            Workload::WitV3 => &[
                System::MemoryGuest,
                System::ZooKeeperGuest,
                System::EtcdGuest,
            ],
            Workload::CachedHandover => &[
                System::ZkFloor,
                System::ZooKeeperNative,
                System::ZooKeeperGuest,
                System::EtcdFloor,
                System::EtcdNative,
                System::EtcdGuest,
            ],
        }
    }

    /// Runs the workload on `systems` (a subset of [`Workload::systems`]).
    ///
    /// # Errors
    /// When a client fails, a guest does not end as expected or ZooKeeper fails.
    pub(crate) async fn run(self, env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
        // `herd` knows every waiter is queued on ZooKeeper by counting the
        // server's watches; with host-local hand-off, local waiters set none.
        let handoff = env.zk().is_ok_and(|zk| zk.options.local_handoff);
        let counts_watches = matches!(self, Workload::Herd);
        let kept: Vec<System> = systems
            .iter()
            .copied()
            .filter(|s| {
                let skip = counts_watches
                    && handoff
                    && matches!(s, System::ZooKeeperNative | System::ZooKeeperGuest);
                if skip {
                    progress(&format!(
                        "{}: {} skipped (needs --no-local-handoff)",
                        self.name(),
                        s.name()
                    ));
                }
                !skip
            })
            .collect();
        let systems = kept.as_slice();
        match self {
            Workload::Uncontended => uncontended::run(env, systems).await,
            Workload::Contended => exclusion::run(env, self, systems).await,
            Workload::Rw => exclusion::run(env, self, systems).await,
            Workload::Herd => herd::run(env, systems).await,
            Workload::ReleaseOnDeath => release_on_death::run(env, systems).await,
            Workload::HostCall => host_call::run(env, systems).await,
            Workload::Instantiate => instantiate::run(env, systems).await,
            Workload::Scale => scale::run(env, systems).await,
            Workload::Spread => spread::run(env, systems).await,
            Workload::Fairness => fairness::run(env, systems).await,
            Workload::Hosts => hosts::run(env, systems).await,
            Workload::Guarded => guarded::run(env, systems).await,
            Workload::LockSet => lock_set::run(env, systems).await,
            Workload::CachedHandover => cached_handover::run(env, systems).await,
            Workload::WitV3 => wit_v3::run(env, systems).await,
        }
    }
}

/// `bench/<workload>/<system>[/<suffix>]`, a valid lock name.
fn lock_name(workload: Workload, system: System, suffix: &str) -> anyhow::Result<LockName> {
    let mut name = format!("bench/{}/{}", workload.name(), system.name());
    if !suffix.is_empty() {
        name.push('/');
        name.push_str(suffix);
    }
    Ok(LockName::new(&name)?)
}

/// A progress line on stderr.
pub(crate) fn progress(message: &str) {
    eprintln!("[wardlock-bench] {message}");
}
