//! `counter LOCK_NAME ITERATIONS FILE`
//!
//! ITERATIONS times: take LOCK_NAME exclusively, read the integer stored in
//! FILE (a missing or empty file counts as 0), write it back incremented and
//! release the lock. Run several instances at once: if the lock provides
//! mutual exclusion, FILE ends up holding the sum of all their ITERATIONS.
//!
//! Exit codes: 0 success, 1 lock or I/O error, 2 bad arguments.

mod value_file;

use std::process::ExitCode;

use wardlock_guest::Lock;

use value_file::{read_value, write_value};

const USAGE: &str = "usage: counter LOCK_NAME ITERATIONS FILE  (ITERATIONS >= 1)";

/// Parsed command line.
struct Args {
    lock_name: String,
    iterations: u64,
    file: String,
}

/// What the last iteration observed, for the summary line.
struct Outcome {
    last_value: u64,
    last_token: u64,
}

fn main() -> ExitCode {
    let Some(args) = parse_args(std::env::args().skip(1).collect()) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match run(&args) {
        Ok(outcome) => {
            println!(
                "counter: {} +{} (last value {}, last fencing token {})",
                args.lock_name, args.iterations, outcome.last_value, outcome.last_token
            );
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("counter: {message}");
            ExitCode::from(1)
        }
    }
}

/// Accepts exactly three arguments; ITERATIONS must be a positive integer
/// (with zero iterations there would be no value or token to report).
fn parse_args(args: Vec<String>) -> Option<Args> {
    let [lock_name, iterations, file] = <[String; 3]>::try_from(args).ok()?;
    let iterations = iterations.parse::<u64>().ok().filter(|n| *n > 0)?;
    Some(Args {
        lock_name,
        iterations,
        file,
    })
}

fn run(args: &Args) -> Result<Outcome, String> {
    let lock = Lock::exclusive(args.lock_name.as_str());
    let mut outcome = Outcome {
        last_value: 0,
        last_token: 0,
    };
    for _ in 0..args.iterations {
        let guard = lock
            .acquire()
            .map_err(|e| format!("acquiring {}: {e}", args.lock_name))?;
        let value = read_value(&args.file)? + 1;
        write_value(&args.file, value)?;
        outcome = Outcome {
            last_value: value,
            last_token: guard.fencing_token(),
        };
        guard
            .release()
            .map_err(|e| format!("releasing {}: {e}", args.lock_name))?;
    }
    Ok(outcome)
}
