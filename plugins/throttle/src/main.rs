//! `throttle NAME PERMITS ROUNDS WORK_MS`: the 0.2.0 SDK's semaphores
//! (`wardlock_guest::v2::acquire_permit`) at work.
//!
//! ROUNDS times: take one of the PERMITS permits of semaphore NAME (so at most
//! PERMITS instances work at once, whatever runs them), work WORK_MS
//! milliseconds while watching the permit ([`Permit::subscribe`] beside a
//! timer, in one `poll`: a lost permit stops the work at once), and release
//! it. Each permit's fencing token must be greater than the last one's.
//!
//! Prints `throttle: NAME ROUNDS rounds of PERMITS permits, last token <T>`.
//! Exit codes: 0 success, 1 lock error or a lost permit, 2 bad arguments.

use std::process::ExitCode;
use std::time::Duration;

use wardlock_guest::v2::{Permit, Status, acquire_permit};
use wasip2::clocks::monotonic_clock::subscribe_duration;
use wasip2::io::poll::poll;

const USAGE: &str = "usage: throttle NAME PERMITS ROUNDS WORK_MS";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, permits, rounds, work_ms] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let (Ok(permits), Ok(rounds), Ok(work_ms)) = (permits.parse(), rounds.parse(), work_ms.parse())
    else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match run(name, permits, rounds, Duration::from_millis(work_ms)) {
        Ok(token) => {
            println!("throttle: {name} {rounds} rounds of {permits} permits, last token {token}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("throttle: {why}");
            ExitCode::from(1)
        }
    }
}

fn run(name: &str, permits: u32, rounds: u64, work: Duration) -> Result<u64, String> {
    let mut last = 0;
    for round in 0..rounds {
        let permit = acquire_permit(name, permits, Some(Duration::from_secs(30)))
            .map_err(|e| format!("round {round}: {e}"))?;
        let token = permit.fencing_token();
        if token <= last {
            return Err(format!("round {round}: token {token} after {last}"));
        }
        last = token;
        work_while_held(&permit, work).map_err(|e| format!("round {round}: {e}"))?;
        permit
            .release()
            .map_err(|e| format!("round {round}: {e}"))?;
    }
    Ok(last)
}

/// "Works" for `work` unless the permit stops being held first.
fn work_while_held(permit: &Permit, work: Duration) -> Result<(), String> {
    let gone = permit.subscribe();
    let nanos = u64::try_from(work.as_nanos()).unwrap_or(u64::MAX);
    let done = subscribe_duration(nanos);
    let ready = poll(&[&gone, &done]);
    drop((gone, done));
    match permit.status() {
        Status::Held if !ready.contains(&0) => Ok(()),
        status => Err(format!("the permit is {status}: work stopped")),
    }
}
