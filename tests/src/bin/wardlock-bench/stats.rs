//! Latency samples, percentiles and throughput of one measured phase.

use std::time::Duration;

use super::systems::Phase;
use super::zk_stats::ZkDelta;

/// Nearest-rank percentile (`q` in 0..=1) of `sorted`, which must be sorted.
pub(crate) fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Nanoseconds since `started` (saturating).
pub(crate) fn elapsed_ns(started: std::time::Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The p50 of `latencies_ns` in µs (0 when empty); sorts them.
pub(crate) fn p50_us(latencies_ns: &mut [u64]) -> f64 {
    latencies_ns.sort_unstable();
    percentile(latencies_ns, 0.5).unwrap_or(0) as f64 / 1000.0
}

/// The median of `values` (the mean of the middle two for an even count).
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// Everything measured for one (system, workload), possibly over several
/// phases (interleaved rounds).
#[derive(Debug, Default, Clone)]
pub(crate) struct Samples {
    /// Per-op latencies in nanoseconds.
    pub latencies_ns: Vec<u64>,
    /// Measured time the ops took (sum over phases).
    pub wall: Duration,
    /// Ops completed.
    pub ops: u64,
    /// Exclusion violations seen.
    pub violations: u64,
    /// ZooKeeper server counters over the phases; `None` without ZooKeeper.
    pub zk: Option<ZkDelta>,
    /// This process's CPU time over the phases, if measured.
    pub cpu: Option<Duration>,
}

impl Samples {
    /// Adds a phase's ops, latencies, time, violations and server counters.
    pub(crate) fn add_phase(&mut self, phase: &Phase) {
        self.latencies_ns.extend(phase.latencies());
        self.wall += phase.wall();
        self.ops += phase.ops();
        self.violations += phase.violations();
        self.add_zk(phase.zk);
        if let Some(cpu) = phase.cpu {
            self.cpu = Some(self.cpu.unwrap_or_default() + cpu);
        }
    }

    /// Adds a ZooKeeper counter delta.
    pub(crate) fn add_zk(&mut self, delta: Option<ZkDelta>) {
        if let Some(delta) = delta {
            self.zk = Some(self.zk.unwrap_or_default() + delta);
        }
    }

    /// Latency percentile in microseconds.
    pub(crate) fn percentile_us(&self, q: f64) -> Option<f64> {
        let mut sorted = self.latencies_ns.clone();
        sorted.sort_unstable();
        percentile(&sorted, q).map(|ns| ns as f64 / 1000.0)
    }

    /// Ops per second over the measured time.
    pub(crate) fn ops_per_s(&self) -> Option<f64> {
        let secs = self.wall.as_secs_f64();
        (secs > 0.0).then(|| self.ops as f64 / secs)
    }

    /// ZooKeeper requests per op.
    pub(crate) fn zk_requests_per_op(&self) -> Option<f64> {
        self.per_op(self.zk.map(|z| z.requests))
    }

    /// Watch notifications per op.
    pub(crate) fn notifications_per_op(&self) -> Option<f64> {
        self.per_op(self.zk.map(|z| z.notifications))
    }

    /// This process's CPU time per op, in microseconds.
    pub(crate) fn cpu_us_per_op(&self) -> Option<f64> {
        let cpu = self.cpu?;
        (self.ops > 0).then(|| cpu.as_secs_f64() * 1e6 / self.ops as f64)
    }

    fn per_op(&self, count: Option<u64>) -> Option<f64> {
        let count = count?;
        (self.ops > 0).then(|| count as f64 / self.ops as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 0.5), Some(50));
        assert_eq!(percentile(&sorted, 0.99), Some(99));
        assert_eq!(percentile(&sorted, 1.0), Some(100));
        assert_eq!(percentile(&sorted, 0.0), Some(1));
        assert_eq!(percentile(&[7], 0.99), Some(7));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
