//! `counter LOCK_NAME ITERATIONS FILE`
//!
//! ITERATIONS times: take LOCK_NAME exclusively, read the integer stored in
//! FILE (a missing or empty file counts as 0), write it back incremented and
//! release the lock. Run several instances at once: if the lock provides
//! mutual exclusion, FILE ends up holding the sum of all their ITERATIONS.
//!
//! Exit codes: 0 success, 1 lock or I/O error, 2 bad arguments.

use std::fs;
use std::io::ErrorKind;
use std::process::ExitCode;

use wardlock_guest::Lock;

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
        fs::write(&args.file, value.to_string())
            .map_err(|e| format!("writing {}: {e}", args.file))?;
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

/// Reads the counter; a missing or empty (whitespace-only) file is 0.
fn read_value(path: &str) -> Result<u64, String> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("reading {path}: {e}")),
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(0);
    }
    text.parse::<u64>()
        .map_err(|e| format!("{path} does not hold an integer ({text:?}): {e}"))
}
