//! CPU time of this process: all its threads (clients, the ZooKeeper client
//! library, wasmtime, tokio's blocking pool), not the ZooKeeper server.

use std::time::Duration;

/// CPU time used by this process so far (`CLOCK_PROCESS_CPUTIME_ID`).
pub(crate) fn process_cpu() -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` only writes the `timespec` it is given, which we own.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    if status != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(now.tv_sec).ok()?,
        u32::try_from(now.tv_nsec).ok()?,
    ))
}

/// CPU time used since `mark`.
pub(crate) fn since(mark: Option<Duration>) -> Option<Duration> {
    Some(process_cpu()?.saturating_sub(mark?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins until the clock has counted 10 ms of this process's CPU time,
    /// and fails when 60 s of spinning are not counted as that. Bounded by
    /// wall time rather than by a wall-time share: on a loaded
    /// machine 20 ms of spinning may get only a third of a core (a CI run
    /// read 7 ms), so the test waits for the work, not for a share of it.
    #[test]
    fn cpu_time_grows_with_work() {
        let before = process_cpu().expect("CLOCK_PROCESS_CPUTIME_ID");
        let started = std::time::Instant::now();
        let bound = Duration::from_secs(60);
        let mut x = 0u64;
        let mut used = Duration::ZERO;
        while used < Duration::from_millis(10) {
            assert!(
                started.elapsed() < bound,
                "{used:?} of CPU time after {bound:?} of spinning"
            );
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            used = since(Some(before)).expect("CLOCK_PROCESS_CPUTIME_ID");
        }
    }
}
