//! `misbehave MODE LOCK_NAME`
//!
//! A guest that ends badly while holding (or waiting for) a lock, to check
//! that the host releases everything an instance owns however it ends.
//!
//! Modes:
//!
//! * `trap-holding`: take LOCK_NAME exclusively, print `holding token=T`,
//!   then panic (a trap).
//! * `spin-holding`: take it exclusively, print `holding token=T`, then loop
//!   forever without calling the host (only a deadline or epoch interruption
//!   can stop it).
//! * `queue-forever`: request it exclusively with no timeout; if it is ever
//!   granted print `granted` and spin forever.
//! * `hoard`: take it shared again and again, keeping every guard, until the
//!   host refuses; print `hoarded N: <error>` and exit 0.
//! * `memory-bomb`: take it exclusively, print `holding token=T`, then
//!   allocate and touch memory without bound.
//!
//! Every line is flushed at once because a trap may follow.
//!
//! Exit codes: 0 for `hoard`, 1 if taking the lock fails, 2 bad arguments;
//! the other modes never end on their own.

use std::hint::black_box;
use std::io::Write;
use std::process::ExitCode;

use wardlock_guest::{Guard, Lock};

const USAGE: &str =
    "usage: misbehave trap-holding|spin-holding|queue-forever|hoard|memory-bomb LOCK_NAME";

/// Size of each allocation made by `memory-bomb`.
const CHUNK_BYTES: usize = 1 << 20;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Ok([mode, lock_name]) = <[String; 2]>::try_from(args) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    run(&mode, &lock_name).unwrap_or_else(|code| code)
}

/// Misbehaves as `mode` says; `Err` carries the exit code of a failure.
fn run(mode: &str, lock_name: &str) -> Result<ExitCode, ExitCode> {
    match mode {
        "trap-holding" => {
            let _guard = hold(lock_name)?;
            panic!("misbehave: trapping while holding {lock_name}");
        }
        "spin-holding" => {
            let _guard = hold(lock_name)?;
            spin();
        }
        "queue-forever" => {
            let _guard = acquire_or_exit(&Lock::exclusive(lock_name))?;
            say("granted");
            spin();
        }
        "hoard" => Ok(hoard(lock_name)),
        "memory-bomb" => {
            let _guard = hold(lock_name)?;
            memory_bomb();
        }
        _ => {
            eprintln!("{USAGE}");
            Err(ExitCode::from(2))
        }
    }
}

/// Takes `lock_name` exclusively (waiting as long as needed) and announces
/// the fencing token; on failure returns the exit code to end with.
fn hold(lock_name: &str) -> Result<Guard, ExitCode> {
    let guard = acquire_or_exit(&Lock::exclusive(lock_name))?;
    say(&format!("holding token={}", guard.fencing_token()));
    Ok(guard)
}

fn acquire_or_exit(lock: &Lock) -> Result<Guard, ExitCode> {
    lock.acquire().map_err(|e| {
        eprintln!("misbehave: acquiring {}: {e}", lock.name());
        ExitCode::from(1)
    })
}

/// Collects shared guards on one name until the host says no.
fn hoard(lock_name: &str) -> ExitCode {
    let lock = Lock::shared(lock_name);
    let mut guards = Vec::new();
    let error = loop {
        match lock.acquire() {
            Ok(guard) => guards.push(guard),
            Err(error) => break error,
        }
    };
    say(&format!("hoarded {}: {error}", guards.len()));
    ExitCode::SUCCESS
}

/// Burns CPU forever without calling the host.
fn spin() -> ! {
    let mut counter: u64 = 0;
    loop {
        counter = black_box(counter.wrapping_add(1));
    }
}

/// Allocates 1 MiB chunks, writing every byte, until allocation fails
/// (which aborts, i.e. traps) or the host's memory limit stops it.
fn memory_bomb() -> ! {
    let mut hog: Vec<Vec<u8>> = Vec::new();
    loop {
        let chunk = vec![0xA5_u8; CHUNK_BYTES];
        hog.push(black_box(chunk));
        black_box(&hog);
    }
}

/// Prints one line and flushes it, so it is out before any trap.
fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    // If stdout is gone there is nobody to tell; keep misbehaving regardless.
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}
