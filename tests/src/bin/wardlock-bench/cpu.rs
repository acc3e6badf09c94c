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

    #[test]
    fn cpu_time_grows_with_work() {
        let before = process_cpu();
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let used = since(before).expect("CLOCK_PROCESS_CPUTIME_ID");
        assert!(
            used >= Duration::from_millis(10),
            "{used:?} after 20 ms of spinning"
        );
    }
}
