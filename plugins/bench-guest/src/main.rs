//! `bench-guest COMMAND ...`: the guest side of `wardlock-bench` (tests/).
//!
//! Commands:
//!
//! * `loop NAME MODE OPS [CHECK_FILE [reopen]]`: OPS times, acquire NAME in MODE, run the
//!   critical section, release (by dropping the guard: one host call). MODE is
//!   `exclusive`, `shared` or `rw:PERCENT:SEED` (each op is a write with
//!   probability PERCENT %, drawn from SEED and the op's index). With
//!   CHECK_FILE, the critical section checks exclusion on a shared counter file
//!   (20 zero-padded digits, rewritten in place; the host creates it): a writer
//!   reads `v` (must be even), writes `v + 1`, reads it back (must be `v + 1`)
//!   and writes `v + 2`; a reader reads twice (even, unchanged). Any other
//!   outcome is a violation. With `reopen` the file is opened for each check
//!   and closed before the release (one descriptor per lock held, not per
//!   instance: thousands of instances fit the process's descriptors). At the
//!   end it prints, in one write:
//!
//!   ```text
//!   done ops=N writes=W violations=V start_unix_ns=S end_unix_ns=E
//!   lat_ns L1 L2 ...
//!   ```
//!
//!   where `L` are the per-op times (acquire + critical section + release) read
//!   from the monotonic clock once per op, and `S`/`E` the wall clock before the
//!   first acquire and after the last release (the host times every client,
//!   guest or native, by these).
//! * `trap-holding NAME GATE`: acquire NAME exclusively, then wait for GATE
//!   (exclusive), print `trap_unix_ns=T` (wall clock) and trap while holding
//!   both.
//!
//! Exit codes: 0 done (violations are reported, not an error), 1 lock or I/O
//! error, 2 bad arguments.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use wardlock_guest::{Lock, Mode};

#[allow(
    dead_code,
    reason = "shared with wardlock-bench, which formats what this side parses"
)]
mod plan;

use plan::Plan;

const USAGE: &str = "usage: bench-guest loop NAME exclusive|shared|rw:PERCENT:SEED OPS [CHECK_FILE [reopen]]\n       bench-guest trap-holding NAME GATE";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["loop", name, mode, ops, rest @ ..] if rest.len() <= 2 => {
            let reopen = match rest.get(1) {
                None => false,
                Some(&"reopen") => true,
                Some(_) => return usage(),
            };
            match (Plan::parse(mode), ops.parse::<u64>()) {
                (Some(plan), Ok(ops)) => run_loop(name, plan, ops, rest.first().copied(), reopen),
                _ => return usage(),
            }
        }
        ["trap-holding", name, gate] => trap_holding(name, gate),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench-guest: {message}");
            ExitCode::from(1)
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn run_loop(
    name: &str,
    plan: Plan,
    ops: u64,
    check: Option<&str>,
    reopen: bool,
) -> Result<(), String> {
    let writer = Lock::exclusive(name);
    let reader = Lock::shared(name);
    let mut counter = match check {
        Some(path) if !reopen => Some(Counter::open(path)?),
        _ => None,
    };
    let mut latencies = Vec::with_capacity(usize::try_from(ops).unwrap_or(0));
    let (mut writes, mut violations) = (0u64, 0u64);
    let start_unix_ns = unix_ns();
    let mut previous = Instant::now();
    for index in 0..ops {
        let mode = if plan.writes(index) {
            Mode::Exclusive
        } else {
            Mode::Shared
        };
        let lock = if mode == Mode::Exclusive {
            &writer
        } else {
            &reader
        };
        let guard = lock
            .acquire()
            .map_err(|e| format!("acquiring {name}: {e}"))?;
        if let Some(counter) = &mut counter {
            violations += counter.critical_section(mode)?;
        } else if let (Some(path), true) = (check, reopen) {
            // Closed at the end of this block, before the release.
            violations += Counter::open(path)?.critical_section(mode)?;
        }
        if mode == Mode::Exclusive {
            writes += 1;
        }
        drop(guard);
        let now = Instant::now();
        latencies.push(now.duration_since(previous).as_nanos());
        previous = now;
    }
    let mut out = format!(
        "done ops={ops} writes={writes} violations={violations} start_unix_ns={start_unix_ns} end_unix_ns={}\nlat_ns",
        unix_ns()
    );
    for latency in latencies {
        // Writing into a String cannot fail.
        let _ = write!(out, " {latency}");
    }
    out.push('\n');
    say(&out);
    Ok(())
}

/// Width of the counter: a zero-padded decimal rewritten in place (the host's
/// `tests/src/bin/wardlock-bench/check.rs` uses the same format).
const WIDTH: usize = 20;

/// Raw `wasi:filesystem` bindings, for one-call positioned reads and writes
/// (`descriptor.read` / `descriptor.write` at offset 0): the same single file
/// operation per access as the host's native clients (`pread`/`pwrite` on
/// tokio's blocking pool), where `std::fs` would add a seek and a stream per
/// access.
mod files {
    wit_bindgen::generate!({
        path: ["../wit/deps/io.wit", "../wit/deps/clocks.wit", "../wit/deps/filesystem.wit"],
        inline: "
            package wardlock:bench-guest;
            world files {
                import wasi:filesystem/preopens@0.2.12;
            }
        ",
        world: "wardlock:bench-guest/files",
        generate_all,
    });
}

use files::wasi::filesystem::preopens::get_directories;
use files::wasi::filesystem::types::{Descriptor, DescriptorFlags, OpenFlags, PathFlags};

/// The shared counter file, opened once.
struct Counter {
    file: Descriptor,
}

impl Counter {
    /// Opens `path`, which must be a file right inside a preopened directory.
    fn open(path: &str) -> Result<Counter, String> {
        let (dir, name) = path
            .rsplit_once('/')
            .ok_or_else(|| format!("{path}: expected DIR/FILE"))?;
        let dir = get_directories()
            .into_iter()
            .find_map(|(descriptor, preopen)| (preopen == dir).then_some(descriptor))
            .ok_or_else(|| format!("{dir} is not a preopened directory"))?;
        let file = dir
            .open_at(
                PathFlags::empty(),
                name,
                OpenFlags::empty(),
                DescriptorFlags::READ | DescriptorFlags::WRITE,
            )
            .map_err(|e| format!("opening {path}: {e:?}"))?;
        Ok(Counter { file })
    }

    /// The exclusion check under the lock; returns the violations seen.
    fn critical_section(&mut self, mode: Mode) -> Result<u64, String> {
        let mut violations = 0;
        let (first, bad) = self.read()?;
        violations += u64::from(bad) + first % 2;
        match mode {
            Mode::Exclusive => {
                self.write(first + 1)?;
                let (back, bad) = self.read()?;
                violations += u64::from(bad || back != first + 1);
                self.write(first + 2)?;
            }
            Mode::Shared => {
                let (second, bad) = self.read()?;
                violations += u64::from(bad || second != first);
            }
        }
        Ok(violations)
    }

    /// `(value, malformed)`: text that is not WIDTH digits is a torn write.
    fn read(&mut self) -> Result<(u64, bool), String> {
        let (bytes, _) = self
            .file
            .read(WIDTH as u64, 0)
            .map_err(|e| format!("reading the counter: {e:?}"))?;
        let value = std::str::from_utf8(&bytes)
            .ok()
            .filter(|t| t.len() == WIDTH && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse().ok());
        Ok(value.map_or((0, true), |v| (v, false)))
    }

    fn write(&mut self, value: u64) -> Result<(), String> {
        let text = format!("{value:0WIDTH$}");
        let written = self
            .file
            .write(text.as_bytes(), 0)
            .map_err(|e| format!("writing the counter: {e:?}"))?;
        if written != WIDTH as u64 {
            return Err(format!("short write to the counter ({written} bytes)"));
        }
        Ok(())
    }
}

fn trap_holding(name: &str, gate: &str) -> Result<(), String> {
    let _held = Lock::exclusive(name)
        .acquire()
        .map_err(|e| format!("acquiring {name}: {e}"))?;
    let _gate = Lock::exclusive(gate)
        .acquire()
        .map_err(|e| format!("acquiring {gate}: {e}"))?;
    say(&format!("trap_unix_ns={}\n", unix_ns()));
    panic!("bench-guest: trapping while holding {name}");
}

fn unix_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Writes `text` in one go and flushes it, so it is out before a trap.
fn say(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(3);
    }
}
