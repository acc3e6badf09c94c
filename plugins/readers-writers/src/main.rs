//! `readers-writers LOCK_NAME ROUNDS FILE WRITE_PERCENT`
//!
//! Each round is, at random, a writer (with probability WRITE_PERCENT %) or a
//! reader:
//!
//! * a writer takes LOCK_NAME exclusively, reads the value `v` in FILE
//!   (missing or empty = 0), writes `v + 1`, reads it back and writes `v + 2`,
//!   so an odd value exists only while a writer is in the middle of its work;
//! * a reader takes LOCK_NAME shared, reads the value twice and expects it to
//!   be even and unchanged.
//!
//! Run several instances at once against the same FILE: any odd or changing
//! value seen under the lock is a violation of reader/writer exclusion. At the
//! end it prints `readers-writers: reads=R writes=W violations=X`.
//!
//! Exit codes: 0 no violations, 1 violations or a lock/I/O error, 2 bad
//! arguments.

#[path = "../../counter/src/value_file.rs"]
mod value_file;

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::process::ExitCode;

use wardlock_guest::Lock;

use value_file::{read_value, write_value};

const USAGE: &str =
    "usage: readers-writers LOCK_NAME ROUNDS FILE WRITE_PERCENT  (WRITE_PERCENT 0..=100)";

/// Parsed command line.
struct Args {
    lock_name: String,
    rounds: u64,
    file: String,
    write_percent: u64,
}

/// Running totals for the summary line.
#[derive(Default)]
struct Tally {
    reads: u64,
    writes: u64,
    violations: u64,
}

fn main() -> ExitCode {
    let Some(args) = parse_args(std::env::args().skip(1).collect()) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match run(&args) {
        Ok(tally) => {
            println!(
                "readers-writers: reads={} writes={} violations={}",
                tally.reads, tally.writes, tally.violations
            );
            if tally.violations > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(message) => {
            eprintln!("readers-writers: {message}");
            ExitCode::from(1)
        }
    }
}

fn parse_args(args: Vec<String>) -> Option<Args> {
    let [lock_name, rounds, file, write_percent] = <[String; 4]>::try_from(args).ok()?;
    Some(Args {
        lock_name,
        rounds: rounds.parse().ok()?,
        file,
        write_percent: write_percent.parse().ok().filter(|p| *p <= 100)?,
    })
}

fn run(args: &Args) -> Result<Tally, String> {
    let writer_lock = Lock::exclusive(args.lock_name.as_str());
    let reader_lock = Lock::shared(args.lock_name.as_str());
    // Randomly keyed per process (from WASI random), so concurrent instances
    // interleave readers and writers differently.
    let random = RandomState::new();
    let mut tally = Tally::default();
    for round in 0..args.rounds {
        let is_writer = random.hash_one(round) % 100 < args.write_percent;
        if is_writer {
            let guard = writer_lock.acquire().map_err(|e| lock_error(args, &e))?;
            tally.violations += write_round(&args.file)?;
            tally.writes += 1;
            guard.release().map_err(|e| lock_error(args, &e))?;
        } else {
            let guard = reader_lock.acquire().map_err(|e| lock_error(args, &e))?;
            tally.violations += read_round(&args.file)?;
            tally.reads += 1;
            guard.release().map_err(|e| lock_error(args, &e))?;
        }
    }
    Ok(tally)
}

/// One writer step under the exclusive lock; returns the violations seen.
///
/// Besides the readers' checks, the writer also counts an odd starting value
/// (another writer was mid-write) and a read-back that differs from what it
/// just wrote (another writer wrote concurrently).
fn write_round(file: &str) -> Result<u64, String> {
    let mut violations = 0;
    let value = read_value(file)?;
    if value % 2 != 0 {
        eprintln!("readers-writers: writer found odd value {value}");
        violations += 1;
    }
    write_value(file, value + 1)?;
    let read_back = read_value(file)?;
    if read_back != value + 1 {
        eprintln!(
            "readers-writers: writer wrote {} but read back {read_back}",
            value + 1
        );
        violations += 1;
    }
    write_value(file, value + 2)?;
    Ok(violations)
}

/// One reader step under the shared lock; returns the violations seen.
fn read_round(file: &str) -> Result<u64, String> {
    let mut violations = 0;
    let first = read_value(file)?;
    if first % 2 != 0 {
        eprintln!("readers-writers: reader saw odd value {first}");
        violations += 1;
    }
    let second = read_value(file)?;
    if second != first {
        eprintln!("readers-writers: reader saw {first} then {second}");
        violations += 1;
    }
    Ok(violations)
}

fn lock_error(args: &Args, error: &wardlock_guest::Error) -> String {
    format!("lock {}: {error}", args.lock_name)
}
