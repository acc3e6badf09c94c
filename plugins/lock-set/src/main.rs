//! `lock-set MODE LOCK ID COUNT [DELAY_MS]` and `lock-set read LOCK`:
//! Jepsen's `lock-set` workload (issue 35) as a guest, the history a checker
//! reads (`wardlock_tests::lock_set::history`).
//!
//! COUNT times, add the element `ID.TAG-i` (TAG: random hex drawn once per
//! instance, so the instances of one `wardlock run --instances K` never share
//! an element) to one set guarded by LOCK, read-modify-write:
//!
//! 1. acquire LOCK exclusive;
//! 2. read the set — MODE `plain`: the file `/data/set` (a preopened dir every
//!    host shares); MODE `guarded`: `guarded::get(LOCK, "set")`;
//! 3. wait DELAY_MS (default 0): **a window a nemesis can hit**. The guest
//!    prints the `read` line just before it, so a harness that pauses the
//!    host on that line pauses a holder between its read and its write, the
//!    schedule that loses updates when nothing fences the write;
//! 4. write the set with the element added — `plain`: the file (a temporary
//!    file renamed over it, so no reader sees half a set); `guarded`:
//!    `guard.put("set", …)`, which commits only while the lock stands;
//! 5. release.
//!
//! Each guest-visible operation is one JSON line on stdout, written in one
//! `write` so the lines of concurrent instances never interleave:
//! `{"op":"acquire"|"add"|"read"|"release","type":"invoke"|"ok"|"fail"|"info",
//! "id":..,"el":..,"token":..,"rev":..,"err":..,"t_ns":..}` (`t_ns`: the wall
//! clock of `wasi:clocks`, comparable across the host processes of one
//! machine). An add's `ok` means acknowledged (the write returned Ok);
//! `fail` means definitely not written (`lost` from the guarded store, or
//! the read failed before any write); `info` means unknown (`unavailable`:
//! the write may have committed). An element whose add failed is retried, at
//! most [`TRIES`] times in all; one whose add is unknown is not.
//!
//! `lock-set read LOCK` prints the guarded store's set as one line:
//! `{"op":"final","type":"ok","set":[..],"token":T,"rev":R,..}` (`token` and
//! `rev` null without an entry).
//!
//! Exit codes: 0 every element was acknowledged or unknown, 1 some element
//! gave up (or the final read failed), 2 bad arguments.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use wardlock_guest::Error;
use wardlock_guest::v2::{Guard, Lock, guarded};

const USAGE: &str =
    "usage: lock-set (plain|guarded) LOCK ID COUNT [DELAY_MS]  |  lock-set read LOCK";

/// The file of the `plain` set, inside the preopened `/data`.
const SET_FILE: &str = "/data/set";

/// The guarded store's key of the set.
const SET_KEY: &str = "set";

/// Attempts per element: a fail (the lock was lost, or could not be taken)
/// is retried, so a paused holder's element is still added once it resumes,
/// but never without bound.
const TRIES: u32 = 5;

/// How long one acquire may wait: longer than any pause a nemesis inflicts
/// plus the session timeout it takes the engine to notice, so a waiter does
/// not give up behind a paused holder; bounded so no guest hangs forever.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Pause before retrying after a fail: the host whose session was lost is
/// reconnecting.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Guarded,
}

struct Args {
    mode: Mode,
    lock: String,
    id: String,
    count: u64,
    delay: Duration,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [read, lock] = args.as_slice()
        && read == "read"
    {
        return read_final(lock);
    }
    let Some(args) = parse(&args) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut gave_up = false;
    for i in 0..args.count {
        let element = format!("{}-{i}", args.id);
        let settled = (0..TRIES).any(|_| {
            let outcome = attempt(&args, &element);
            if outcome == Outcome::Failed {
                std::thread::sleep(RETRY_PAUSE);
            }
            outcome == Outcome::Settled
        });
        gave_up |= !settled;
    }
    if gave_up {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn parse(args: &[String]) -> Option<Args> {
    let (mode, lock, id, count, delay) = match args {
        [mode, lock, id, count] => (mode, lock, id, count, "0"),
        [mode, lock, id, count, delay] => (mode, lock, id, count, delay.as_str()),
        _ => return None,
    };
    let mode = match mode.as_str() {
        "plain" => Mode::Plain,
        "guarded" => Mode::Guarded,
        _ => return None,
    };
    let tag = wasip2::random::random::get_random_u64() & 0xff_ffff;
    Some(Args {
        mode,
        lock: lock.clone(),
        id: format!("{id}.{tag:06x}"),
        count: count.parse().ok()?,
        delay: Duration::from_millis(delay.parse().ok()?),
    })
}

/// How one attempt at adding an element ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Acknowledged or unknown: not retried.
    Settled,
    /// Definitely not written: retried.
    Failed,
}

/// One acquire, read, wait, write, release.
fn attempt(args: &Args, element: &str) -> Outcome {
    let log = Log { id: &args.id };
    log.line("acquire", "invoke", &[]);
    let guard = match Lock::exclusive(args.lock.as_str())
        .timeout(ACQUIRE_TIMEOUT)
        .acquire()
    {
        Ok(guard) => guard,
        Err(error) => {
            log.line("acquire", "fail", &[err(&error)]);
            return Outcome::Failed;
        }
    };
    let token = guard.fencing_token();
    log.line("acquire", "ok", &[Field::Num("token", token)]);
    let at = [Field::Str("el", element), Field::Num("token", token)];
    log.line("add", "invoke", &at);
    let outcome = match read_set(args, &guard) {
        Err(error) => {
            // Nothing was written yet: definitely not added.
            log.line("add", "fail", &[at[0], at[1], Field::Str("err", &error)]);
            Outcome::Failed
        }
        Ok(mut set) => {
            let size = u64::try_from(set.len()).unwrap_or(u64::MAX);
            log.line("read", "ok", &[at[0], at[1], Field::Num("size", size)]);
            std::thread::sleep(args.delay);
            set.push(element.to_owned());
            set.sort();
            set.dedup();
            write_set(args, &guard, &set, &log, at)
        }
    };
    log.line("release", "invoke", &[Field::Num("token", token)]);
    match guard.release() {
        Ok(()) => log.line("release", "ok", &[Field::Num("token", token)]),
        Err(error) => log.line(
            "release",
            "fail",
            &[Field::Num("token", token), err(&error)],
        ),
    }
    outcome
}

/// The set as the holder reads it.
fn read_set(args: &Args, _guard: &Guard) -> Result<Vec<String>, String> {
    let text = match args.mode {
        Mode::Plain => match std::fs::read_to_string(SET_FILE) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(format!("io: {error}")),
        },
        Mode::Guarded => match guarded::get(&args.lock, SET_KEY) {
            Ok(entry) => entry
                .map(|e| String::from_utf8_lossy(&e.value).into_owned())
                .unwrap_or_default(),
            Err(error) => return Err(error.kind().to_owned()),
        },
    };
    Ok(elements(&text))
}

/// Writes `set` and logs the add's completion.
fn write_set(args: &Args, guard: &Guard, set: &[String], log: &Log, at: [Field; 2]) -> Outcome {
    let bytes = set.join("\n");
    match args.mode {
        Mode::Plain => {
            let temporary = format!("{SET_FILE}.{}", args.id);
            let written = std::fs::write(&temporary, &bytes)
                .and_then(|()| std::fs::rename(&temporary, SET_FILE));
            match written {
                Ok(()) => {
                    log.line("add", "ok", &at);
                    Outcome::Settled
                }
                Err(error) => {
                    let error = format!("io: {error}");
                    log.line("add", "info", &[at[0], at[1], Field::Str("err", &error)]);
                    Outcome::Settled
                }
            }
        }
        Mode::Guarded => match guard.put(SET_KEY, bytes.as_bytes()) {
            Ok(revision) => {
                log.line("add", "ok", &[at[0], at[1], Field::Num("rev", revision)]);
                Outcome::Settled
            }
            Err(error @ Error::Unavailable(_)) => {
                log.line("add", "info", &[at[0], at[1], err(&error)]);
                Outcome::Settled
            }
            Err(error) => {
                // `lost` above all: the engine refused the write, nothing
                // was written.
                log.line("add", "fail", &[at[0], at[1], err(&error)]);
                Outcome::Failed
            }
        },
    }
}

/// `lock-set read LOCK`: the guarded set as one `final` line.
fn read_final(lock: &str) -> ExitCode {
    let log = Log { id: "read" };
    match guarded::get(lock, SET_KEY) {
        Ok(entry) => {
            let (set, token, revision) = match entry {
                Some(e) => (
                    elements(&String::from_utf8_lossy(&e.value)),
                    Some(e.token),
                    Some(e.revision),
                ),
                None => (Vec::new(), None, None),
            };
            let mut list = String::from("[");
            for (index, element) in set.iter().enumerate() {
                if index > 0 {
                    list.push(',');
                }
                list.push_str(&quoted(element));
            }
            list.push(']');
            log.line(
                "final",
                "ok",
                &[
                    Field::Raw("set", &list),
                    Field::Opt("token", token),
                    Field::Opt("rev", revision),
                ],
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            log.line("final", "fail", &[err(&error)]);
            ExitCode::FAILURE
        }
    }
}

/// The elements of a stored set (one per line).
fn elements(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One field of a history line.
#[derive(Clone, Copy)]
enum Field<'a> {
    Str(&'static str, &'a str),
    Num(&'static str, u64),
    Opt(&'static str, Option<u64>),
    /// Already JSON.
    Raw(&'static str, &'a str),
}

fn err(error: &Error) -> Field<'static> {
    Field::Str("err", error.kind())
}

/// Writes this instance's history lines.
struct Log<'a> {
    id: &'a str,
}

impl Log<'_> {
    /// One JSON line, stamped with the wall clock, in one write.
    fn line(&self, op: &str, kind: &str, fields: &[Field]) {
        let now = wasip2::clocks::wall_clock::now();
        let t_ns = u128::from(now.seconds) * 1_000_000_000 + u128::from(now.nanoseconds);
        let mut line = format!(
            "{{\"op\":{},\"type\":{},\"id\":{}",
            quoted(op),
            quoted(kind),
            quoted(self.id)
        );
        for field in fields {
            let _ = match field {
                Field::Str(key, value) => write!(line, ",\"{key}\":{}", quoted(value)),
                Field::Num(key, value) => write!(line, ",\"{key}\":{value}"),
                Field::Opt(key, Some(value)) => write!(line, ",\"{key}\":{value}"),
                Field::Opt(key, None) => write!(line, ",\"{key}\":null"),
                Field::Raw(key, value) => write!(line, ",\"{key}\":{value}"),
            };
        }
        let _ = writeln!(line, ",\"t_ns\":{t_ns}}}");
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }
}

/// `text` as a JSON string.
fn quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(quoted, "\\u{:04x}", u32::from(c));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}
