//! `loss-check LOCK PARKED ACK MS`: work under a lock, written with the Rust
//! SDK as a guest would write it: take LOCK, then PARKED (so the host knows
//! the work began), then do steps of 1 ms, each after `guard.check()?`,
//! for at most MS ms. Once a check fails, take ACK (the host watches for it)
//! and print `checked <kind>` (`checked lost`); if every check passed,
//! print `still held`. The Rust counterpart of `conform2`'s `check-until`
//! (tests/e2e/conform2.rs).
//!
//! Exit codes: 0 as described, 1 a lock could not be taken, 2 bad arguments.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use wardlock_guest::{Error, Guard, Lock};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [lock, parked, ack, ms] = args.as_slice() else {
        eprintln!("usage: loss-check LOCK PARKED ACK MS");
        return ExitCode::from(2);
    };
    let Ok(ms) = ms.parse::<u64>() else {
        eprintln!("loss-check: MS must be a whole number, not {ms:?}");
        return ExitCode::from(2);
    };
    let taken = Lock::exclusive(lock.as_str())
        .acquire()
        .and_then(|guard| Ok((guard, Lock::exclusive(parked.as_str()).acquire()?)));
    let (guard, _parked) = match taken {
        Ok(taken) => taken,
        Err(error) => {
            eprintln!("loss-check: {error}");
            return ExitCode::from(1);
        }
    };
    match work(&guard, Duration::from_millis(ms)) {
        Ok(()) => println!("still held"),
        Err(error) => {
            let _ack = Lock::exclusive(ack.as_str()).try_acquire();
            println!("checked {}", error.kind());
        }
    }
    ExitCode::SUCCESS
}

/// Steps of 1 ms for at most `limit`, each only while the lock is held.
fn work(guard: &Guard, limit: Duration) -> Result<(), Error> {
    let started = Instant::now();
    while started.elapsed() < limit {
        guard.check()?;
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}
