//! `lockctl COMMAND...`: a scriptable probe of the wardlock lock interface.
//!
//! Written only against `wit/lock.wit` with raw `wit-bindgen` output (no
//! SDK), to prove that a guest built independently from the WIT contract
//! works with the host.
//!
//! Each argument is one command. Commands run in order and each prints
//! exactly one line on stdout, flushed at once. Handles are numbered 1, 2, 3…
//! in the order they are obtained. Fields are separated by single spaces;
//! NAME is the rest of the argument verbatim, so it may be empty or contain
//! spaces (a missing NAME field counts as empty).
//!
//! | command                      | prints                                     |
//! |------------------------------|--------------------------------------------|
//! | `acquire MODE TIMEOUT NAME`  | `h<N> token=<T>` or an error line          |
//! | `try MODE NAME`              | `h<N> token=<T>`, `none` or an error line  |
//! | `release N`                  | `ok` or an error line                      |
//! | `drop N`                     | `dropped` (the handle's resource is dropped) |
//! | `status N`                   | `held`, `suspended`, `lost` or `released`  |
//! | `token N`                    | the fencing token                          |
//! | `name N`                     | the lock name                              |
//! | `mode N`                     | `exclusive` or `shared`                    |
//! | `trap`                       | `trapping`, then traps                     |
//! | `spin`                       | `spinning`, then loops forever             |
//! | `exit CODE`                  | `exiting`, then exits with CODE            |
//! | `hoard MODE NAME`            | `hoarded <count> <error line>`             |
//! | `until N STATUS MS`          | `became <status>` or `still <status>`      |
//!
//! MODE is `exclusive` or `shared`; TIMEOUT is milliseconds or `-` for none.
//! `hoard` acquires NAME (no timeout) until an error, keeping every handle.
//! `until` asks handle N's status every millisecond until it is STATUS (then
//! `became STATUS`) or MS milliseconds passed (then `still <last status>`).
//!
//! An error line is `err <variant>` or `err <variant>: <text>`, with the WIT
//! case names; a handle number that does not name a live handle gives
//! `err no-such-handle`. An unparseable command prints `bad-command: <arg>`
//! and exits with code 2 (commands before it have already run).

use std::hint::black_box;

mod say;
use say::say;

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "guest",
    });
}

use bindings::wardlock::lock::locks::{self, Lock, Options};
use bindings::wardlock::lock::types::{Error, Mode, Status};

/// One parsed command line argument.
enum Command {
    Acquire {
        mode: Mode,
        timeout_ms: Option<u64>,
        name: String,
    },
    Try {
        mode: Mode,
        name: String,
    },
    Release(usize),
    Drop(usize),
    Status(usize),
    Token(usize),
    Name(usize),
    Mode(usize),
    Trap,
    Spin,
    Exit(i32),
    Hoard {
        mode: Mode,
        name: String,
    },
    Until {
        handle: usize,
        status: String,
        timeout_ms: u64,
    },
}

/// Handles in the order obtained; handle N is at index N - 1, `None` once
/// dropped.
struct Handles {
    slots: Vec<Option<Lock>>,
}

impl Handles {
    /// Stores a new handle and returns its number.
    fn push(&mut self, lock: Lock) -> usize {
        self.slots.push(Some(lock));
        self.slots.len()
    }

    fn get(&self, number: usize) -> Option<&Lock> {
        let index = number.checked_sub(1)?;
        self.slots.get(index)?.as_ref()
    }

    /// Removes handle `number`, returning it if it was live.
    fn take(&mut self, number: usize) -> Option<Lock> {
        let index = number.checked_sub(1)?;
        self.slots.get_mut(index)?.take()
    }
}

const NO_SUCH_HANDLE: &str = "err no-such-handle";

fn main() {
    let mut handles = Handles { slots: Vec::new() };
    for arg in std::env::args().skip(1) {
        let Some(command) = parse(&arg) else {
            say(&format!("bad-command: {arg}"));
            std::process::exit(2);
        };
        let line = execute(command, &mut handles);
        say(&line);
    }
}

/// Parses one argument; `None` if it is not a well-formed command.
fn parse(arg: &str) -> Option<Command> {
    let (word, rest) = match arg.split_once(' ') {
        Some((word, rest)) => (word, Some(rest)),
        None => (arg, None),
    };
    let command = match (word, rest) {
        ("trap", None) => Command::Trap,
        ("spin", None) => Command::Spin,
        ("exit", Some(code)) => Command::Exit(code.parse().ok()?),
        ("release", Some(n)) => Command::Release(parse_handle(n)?),
        ("drop", Some(n)) => Command::Drop(parse_handle(n)?),
        ("status", Some(n)) => Command::Status(parse_handle(n)?),
        ("token", Some(n)) => Command::Token(parse_handle(n)?),
        ("name", Some(n)) => Command::Name(parse_handle(n)?),
        ("mode", Some(n)) => Command::Mode(parse_handle(n)?),
        ("acquire", Some(rest)) => {
            let mut fields = rest.splitn(3, ' ');
            let mode = parse_mode(fields.next()?)?;
            let timeout_ms = match fields.next()? {
                "-" => None,
                millis => Some(millis.parse().ok()?),
            };
            let name = fields.next().unwrap_or("").to_string();
            Command::Acquire {
                mode,
                timeout_ms,
                name,
            }
        }
        ("try", Some(rest)) => {
            let (mode, name) = split_mode_name(rest)?;
            Command::Try { mode, name }
        }
        ("until", Some(rest)) => {
            let mut fields = rest.splitn(3, ' ');
            let handle = parse_handle(fields.next()?)?;
            let status = fields.next()?.to_string();
            let timeout_ms = fields.next()?.parse().ok()?;
            Command::Until {
                handle,
                status,
                timeout_ms,
            }
        }
        ("hoard", Some(rest)) => {
            let (mode, name) = split_mode_name(rest)?;
            Command::Hoard { mode, name }
        }
        _ => return None,
    };
    Some(command)
}

/// Splits `MODE NAME` (NAME may be empty or absent).
fn split_mode_name(rest: &str) -> Option<(Mode, String)> {
    let (mode, name) = rest.split_once(' ').unwrap_or((rest, ""));
    Some((parse_mode(mode)?, name.to_string()))
}

fn parse_mode(word: &str) -> Option<Mode> {
    match word {
        "exclusive" => Some(Mode::Exclusive),
        "shared" => Some(Mode::Shared),
        _ => None,
    }
}

/// Handle numbers are plain decimal digits.
fn parse_handle(word: &str) -> Option<usize> {
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

/// Runs one command and returns its output line (diverging commands print
/// their own line first).
fn execute(command: Command, handles: &mut Handles) -> String {
    match command {
        Command::Acquire {
            mode,
            timeout_ms,
            name,
        } => match locks::acquire(&name, Options { mode, timeout_ms }) {
            Ok(lock) => granted(handles, lock),
            Err(error) => error_line(&error),
        },
        Command::Try { mode, name } => match locks::try_acquire(&name, mode) {
            Ok(Some(lock)) => granted(handles, lock),
            Ok(None) => "none".to_string(),
            Err(error) => error_line(&error),
        },
        Command::Release(n) => match handles.get(n) {
            Some(lock) => match lock.release() {
                Ok(()) => "ok".to_string(),
                Err(error) => error_line(&error),
            },
            None => NO_SUCH_HANDLE.to_string(),
        },
        Command::Drop(n) => match handles.take(n) {
            Some(lock) => {
                drop(lock);
                "dropped".to_string()
            }
            None => NO_SUCH_HANDLE.to_string(),
        },
        Command::Status(n) => {
            with_handle(handles, n, |lock| status_name(lock.status()).to_string())
        }
        Command::Until {
            handle,
            status,
            timeout_ms,
        } => with_handle(handles, handle, |lock| {
            let started = std::time::Instant::now();
            loop {
                let now = status_name(lock.status());
                if now == status {
                    return format!("became {now}");
                }
                if started.elapsed() >= std::time::Duration::from_millis(timeout_ms) {
                    return format!("still {now}");
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }),
        Command::Token(n) => with_handle(handles, n, |lock| lock.fencing_token().to_string()),
        Command::Name(n) => with_handle(handles, n, |lock| lock.name()),
        Command::Mode(n) => with_handle(handles, n, |lock| mode_name(lock.mode()).to_string()),
        Command::Trap => {
            say("trapping");
            panic!("lockctl: trap command");
        }
        Command::Spin => {
            say("spinning");
            let mut counter: u64 = 0;
            loop {
                counter = black_box(counter.wrapping_add(1));
            }
        }
        Command::Exit(code) => {
            say("exiting");
            std::process::exit(code);
        }
        Command::Hoard { mode, name } => {
            let mut count: u64 = 0;
            loop {
                let options = Options {
                    mode,
                    timeout_ms: None,
                };
                match locks::acquire(&name, options) {
                    Ok(lock) => {
                        handles.push(lock);
                        count += 1;
                    }
                    Err(error) => break format!("hoarded {count} {}", error_line(&error)),
                }
            }
        }
    }
}

/// Numbers a newly granted handle and formats the success line.
fn granted(handles: &mut Handles, lock: Lock) -> String {
    let token = lock.fencing_token();
    let number = handles.push(lock);
    format!("h{number} token={token}")
}

fn with_handle(handles: &Handles, number: usize, show: impl FnOnce(&Lock) -> String) -> String {
    match handles.get(number) {
        Some(lock) => show(lock),
        None => NO_SUCH_HANDLE.to_string(),
    }
}

/// Formats an error as `err <variant>` or `err <variant>: <text>`.
fn error_line(error: &Error) -> String {
    match error {
        Error::InvalidName(text) => format!("err invalid-name: {text}"),
        Error::Denied(text) => format!("err denied: {text}"),
        Error::Timeout => "err timeout".to_string(),
        Error::WouldBlock => "err would-block".to_string(),
        Error::WouldDeadlock => "err would-deadlock".to_string(),
        Error::Lost => "err lost".to_string(),
        Error::Released => "err released".to_string(),
        Error::LimitExceeded(text) => format!("err limit-exceeded: {text}"),
        Error::Unavailable(text) => format!("err unavailable: {text}"),
    }
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::Held => "held",
        Status::Suspended => "suspended",
        Status::Lost => "lost",
        Status::Released => "released",
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Exclusive => "exclusive",
        Mode::Shared => "shared",
    }
}
