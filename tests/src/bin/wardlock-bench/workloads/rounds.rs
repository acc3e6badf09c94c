//! Several systems measured interleaved: a warm-up phase each (not recorded),
//! then [`ROUNDS`] rounds (or the shape's own count) in which every system runs
//! its share of the ops in turn, so the drift of a noisy machine (or a warming
//! JVM) hits all alike.

use super::{Workload, lock_name, progress};
use crate::check::{self, Plan};
use crate::env::Env;
use crate::stats::Samples;
use crate::systems::{LoopSpec, System, run_phase};

/// Rounds per interleaved measurement.
pub(super) const ROUNDS: u64 = 10;

/// What every phase runs.
pub(super) struct Shape {
    /// Concurrent clients, all on the system's one lock (unless `spread`).
    pub clients: u64,
    /// Each client on a lock of its own (`<lock>/c<client>`) instead.
    pub spread: bool,
    /// Ops per client over all rounds.
    pub ops: u64,
    /// The plan of client `c`.
    pub plan: fn(u64) -> Plan,
    /// Whether the critical section checks a counter file (one per system).
    pub check: bool,
    /// Measured rounds ([`ROUNDS`] but in `uncontended`).
    pub rounds: u64,
}

/// One system's results.
pub(super) struct Measured {
    pub system: System,
    pub samples: Samples,
    pub writes: u64,
    /// Each round's p50, µs.
    pub round_p50_us: Vec<f64>,
}

/// Measures `shape` on every system of `systems`, interleaved. With a check,
/// lost updates count as violations.
///
/// # Errors
/// The first failing phase.
pub(super) async fn interleaved(
    env: &Env,
    workload: Workload,
    systems: &[System],
    shape: &Shape,
) -> anyhow::Result<Vec<Measured>> {
    let counter = |system: System| format!("{}-{}", workload.name(), system.name());
    let specs = |system: System, ops: u64| -> anyhow::Result<Vec<LoopSpec>> {
        let lock = lock_name(workload, system, "")?;
        (0..shape.clients)
            .map(|client| {
                Ok(LoopSpec {
                    lock: if shape.spread {
                        lock_name(workload, system, &format!("c{client}"))?
                    } else {
                        lock.clone()
                    },
                    plan: (shape.plan)(client),
                    ops,
                    check: shape.check.then(|| counter(system)),
                    reopen: false,
                })
            })
            .collect()
    };
    let reset = |systems: &[System]| -> anyhow::Result<()> {
        for &system in systems.iter().filter(|_| shape.check) {
            check::reset(&env.dir().join(counter(system)))?;
        }
        Ok(())
    };
    reset(systems)?;
    let warm_up = (shape.ops / 10).clamp(1, 100);
    for &system in systems {
        progress(&format!(
            "{}: {} warm-up ({} × {warm_up} ops)",
            workload.name(),
            system.name(),
            shape.clients
        ));
        run_phase(env, system, specs(system, warm_up)?).await?;
    }
    reset(systems)?;
    let mut measured: Vec<Measured> = systems
        .iter()
        .map(|&system| Measured {
            system,
            samples: Samples::default(),
            writes: 0,
            round_p50_us: Vec::new(),
        })
        .collect();
    let rounds = shape.rounds.max(1);
    for round in 0..rounds {
        // Spread the remainder over the first rounds.
        let share = shape.ops / rounds + u64::from(round < shape.ops % rounds);
        if share == 0 {
            continue;
        }
        for entry in &mut measured {
            progress(&format!(
                "{}: {} round {}/{rounds} ({} × {share} ops)",
                workload.name(),
                entry.system.name(),
                round + 1,
                shape.clients
            ));
            let phase = run_phase(env, entry.system, specs(entry.system, share)?).await?;
            entry.samples.add_phase(&phase);
            entry.writes += phase.writes();
            let mut round_samples = Samples::default();
            round_samples.add_phase(&phase);
            if let Some(p50) = round_samples.percentile_us(0.5) {
                entry.round_p50_us.push(p50);
            }
        }
    }
    for entry in measured.iter_mut().filter(|_| shape.check) {
        let file = env.dir().join(counter(entry.system));
        entry.samples.violations += check::lost_updates(&file, entry.writes)?;
    }
    Ok(measured)
}
