//! A guest that has never heard of wardlock: it imports WASI alone and
//! increments an integer in a file by reading it and writing it back, the way
//! a plugin written for any WASI host does. Run side by side it loses updates;
//! run with a declared lock (`wardlock run --hold NAME`) it does not, because
//! the host holds the lock for the instance's whole life.
//!
//! ```text
//! plain-counter count FILE TIMES   add TIMES to the integer in FILE, one read and write each
//! plain-counter wait               print WARDLOCK_HELD, then wait until stopped
//! ```
//!
//! Both print `WARDLOCK_HELD` (the declared locks and their fencing tokens,
//! `name=token` separated by spaces) first, when the host set it.

use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    if let Ok(held) = std::env::var("WARDLOCK_HELD") {
        println!("held: {held}");
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["count", file, times] => match times.parse::<u32>() {
            Ok(times) => count(file, times),
            Err(_) => fail(&format!("{times:?} is not a number of updates")),
        },
        ["wait"] => loop {
            std::thread::sleep(Duration::from_millis(10));
        },
        _ => fail("usage: plain-counter count FILE TIMES | plain-counter wait"),
    }
}

/// Adds `times` to the integer in `file` (absent: 0), one read-modify-write
/// at a time, with nothing to keep another instance out in between.
fn count(file: &str, times: u32) -> ExitCode {
    for _ in 0..times {
        let value = match std::fs::read_to_string(file) {
            // Empty: new, or caught between another instance's truncate and
            // write (`fs::write` does both), which only a lock prevents.
            Ok(text) if text.trim().is_empty() => 0,
            Ok(text) => match text.trim().parse::<u64>() {
                Ok(value) => value,
                Err(_) => return fail(&format!("{file} holds {text:?}, not a number")),
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => 0,
            Err(error) => return fail(&format!("cannot read {file}: {error}")),
        };
        // Another instance may read the same value meanwhile: the lost update
        // a declared lock prevents. A pause widens the window, as real work would.
        std::thread::sleep(Duration::from_micros(200));
        if let Err(error) = std::fs::write(file, (value + 1).to_string()) {
            return fail(&format!("cannot write {file}: {error}"));
        }
    }
    ExitCode::SUCCESS
}

fn fail(why: &str) -> ExitCode {
    eprintln!("plain-counter: {why}");
    ExitCode::FAILURE
}
