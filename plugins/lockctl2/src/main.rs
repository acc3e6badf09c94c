//! `lockctl2 COMMAND...`: a scriptable probe of `wardlock:lock@0.2.2`
//! (`wit/v0.2/lock.wit`), with raw `wit-bindgen` output and no SDK, like
//! `lockctl` for 0.1.0 (which stays on 0.1.0, so both versions are tested).
//!
//! Each argument is one command; each prints one line on stdout, flushed at
//! once. Lock handles are numbered 1, 2, 3… in the order obtained (by
//! `acquire` and `many`); pending locks p1, p2… by `async`.
//!
//! | command                         | prints                                       |
//! |---------------------------------|----------------------------------------------|
//! | `acquire MODE TIMEOUT NAME`     | `h<N> token=<T>` or an error line            |
//! | `many TIMEOUT [MODE:NAME]...`   | `h<N> h<N+1> ...` or an error line           |
//! | `loop-many COUNT TIMEOUT FILE [MODE:NAME]...` | `looped <COUNT>` or `failed at <i>: <error line>` |
//! | `release N` / `drop N`          | `ok` or an error line / `dropped`            |
//! | `status N`                      | `held`, `suspended`, `lost` or `released`    |
//! | `notify N ACK`                  | `woke <status>`: see below                   |
//! | `until N STATUS MS`             | `became <status>` or `still <status>`        |
//! | `async MODE TIMEOUT NAME`       | `p<N>` or an error line                      |
//! | `race P MS`                     | `pending` or `timer`                         |
//! | `get P`                         | `none`, `h<N> token=<T>` or an error line    |
//! | `drop-pending P`                | `dropped`                                    |
//! | `revoke NAME`                   | `asked <N>` or an error line                 |
//! | `revoked N`                     | `true` or `false`                            |
//! | `await-revocation N ACK MS`     | `revoked` or `timer` (see `revoke.rs`)       |
//! | `contenders NAME LIMIT`         | `<total> | held x <token> <owner> | ...` (see `inspect.rs`) |
//! | `trap`                          | nothing: the guest traps (a panic)           |
//!
//! Semaphore permits (q1, q2…): see `permits.rs` (`permit`, `try-permit`,
//! `loop-permit`, …). The guarded store (0.2.2): see `guarded.rs` (`put`,
//! `del`, `read`, `keys`, `wait-file`). Leader election (0.2.2): see `election.rs`
//! (`campaign`, `leader`, `proclaim`, `resign`, `observe`, …). Roles for
//! instances running one script: see `roles.rs` (`claim PATH` prints
//! `claim 1` or `claim 2`; later commands then have `{mine}`/`{theirs}`
//! replaced with `a`/`b` in role 1, `b`/`a` in role 2, and `{role}` with the
//! role).
//!
//! MODE is `exclusive` (`x`) or `shared` (`s`); TIMEOUT is milliseconds or `-`.
//! `loop-many` takes the locks COUNT times, each time adding one to the
//! integer in FILE (a lost update shows a broken exclusion) and releasing them.
//! `notify N ACK` waits on handle N's `subscribe` pollable, then at once asks
//! `try-acquire` for the lock ACK (so the host sees when the guest woke; a
//! granted ACK is kept as the next handle) and prints the status of N. `race P MS` polls pending lock P's pollable and a
//! timer of MS milliseconds together and names the one ready first. An error
//! line is `err <variant>` or `err <variant>: <text>`. `until` asks handle
//! N's status every millisecond until it is STATUS or MS milliseconds passed.

mod election;
mod guarded;
mod inspect;
mod permits;
mod revoke;
mod roles;
#[path = "../../lockctl/src/say.rs"]
mod say;

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/v0.2",
        world: "wardlock:lock/guest@0.2.2",
        with: { "wasi:io/poll@0.2.12": wasip2::io::poll },
    });
}

use bindings::wardlock::lock::locks::{self, Lock, Options, PendingLock, Permit, Request};
use bindings::wardlock::lock::types::{Error, Mode, Status};
use say::say;

#[derive(Default)]
struct State {
    locks: Vec<Option<Lock>>,
    pending: Vec<Option<PendingLock>>,
    permits: Vec<Option<Permit>>,
    elections: election::Elections,
    role: roles::Role,
}

impl State {
    fn push(&mut self, lock: Lock) -> usize {
        self.locks.push(Some(lock));
        self.locks.len()
    }

    fn lock(&self, n: usize) -> Option<&Lock> {
        self.locks.get(n.checked_sub(1)?)?.as_ref()
    }

    fn pending(&self, n: usize) -> Option<&PendingLock> {
        self.pending.get(n.checked_sub(1)?)?.as_ref()
    }

    /// Keeps `lock`, if any, as the next handle.
    fn keep(&mut self, lock: Option<Lock>) {
        if let Some(lock) = lock {
            self.push(lock);
        }
    }

    fn permit(&self, n: usize) -> Option<&Permit> {
        self.permits.get(n.checked_sub(1)?)?.as_ref()
    }
}

fn main() {
    let mut state = State::default();
    for arg in std::env::args().skip(1) {
        let arg = state.role.expand(&arg);
        let words: Vec<&str> = arg.split(' ').collect();
        let Some(line) = execute(&words, &mut state) else {
            say(&format!("bad-command: {arg}"));
            std::process::exit(2);
        };
        say(&line);
    }
}

/// Runs one command; `None` when it is malformed.
fn execute(words: &[&str], state: &mut State) -> Option<String> {
    let line = match words {
        ["acquire", mode, timeout, name] => {
            let options = Options {
                mode: mode_of(mode)?,
                timeout_ms: timeout_of(timeout)?,
            };
            match locks::acquire(name, options) {
                Ok(lock) => granted(state, lock),
                Err(error) => error_line(&error),
            }
        }
        ["many", timeout, specs @ ..] => {
            let requests = requests_of(specs)?;
            match locks::acquire_many(&requests, timeout_of(timeout)?) {
                Ok(locks) => {
                    let numbers: Vec<String> = locks
                        .into_iter()
                        .map(|lock| format!("h{}", state.push(lock)))
                        .collect();
                    numbers.join(" ")
                }
                Err(error) => error_line(&error),
            }
        }
        ["loop-many", count, timeout, file, specs @ ..] => {
            let count: u64 = count.parse().ok()?;
            loop_many(count, timeout_of(timeout)?, file, &requests_of(specs)?)
        }
        ["release", n] => match state.lock(number(n)?) {
            Some(lock) => match lock.release() {
                Ok(()) => "ok".into(),
                Err(error) => error_line(&error),
            },
            None => "err no-such-handle".into(),
        },
        ["drop", n] => {
            let slot = state.locks.get_mut(number(n)?.checked_sub(1)?)?;
            drop(slot.take());
            "dropped".into()
        }
        ["status", n] => match state.lock(number(n)?) {
            Some(lock) => status_name(lock.status()).into(),
            None => "err no-such-handle".into(),
        },
        ["notify", n, ack] => match state.lock(number(n)?) {
            Some(lock) => {
                let acked = notify(lock.subscribe(), ack);
                let line = format!("woke {}", status_name(lock.status()));
                state.keep(acked);
                line
            }
            None => "err no-such-handle".into(),
        },
        ["until", n, status, ms] => match state.lock(number(n)?) {
            Some(lock) => {
                let limit = std::time::Duration::from_millis(ms.parse().ok()?);
                let started = std::time::Instant::now();
                loop {
                    let now = status_name(lock.status());
                    if now == *status {
                        break format!("became {now}");
                    }
                    if started.elapsed() >= limit {
                        break format!("still {now}");
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            None => "err no-such-handle".into(),
        },
        ["async", mode, timeout, name] => {
            let options = Options {
                mode: mode_of(mode)?,
                timeout_ms: timeout_of(timeout)?,
            };
            match locks::acquire_async(name, options) {
                Ok(pending) => {
                    state.pending.push(Some(pending));
                    format!("p{}", state.pending.len())
                }
                Err(error) => error_line(&error),
            }
        }
        ["race", p, ms] => {
            let millis: u64 = ms.parse().ok()?;
            match state.pending(number(p)?) {
                Some(pending) => {
                    let lock = pending.subscribe();
                    let timer = wasip2::clocks::monotonic_clock::subscribe_duration(
                        millis.saturating_mul(1_000_000),
                    );
                    let ready = wasip2::io::poll::poll(&[&lock, &timer]);
                    let first = if ready.contains(&0) {
                        "pending"
                    } else {
                        "timer"
                    };
                    first.to_string()
                }
                None => "err no-such-pending".into(),
            }
        }
        ["get", p] => match state.pending(number(p)?) {
            Some(pending) => match pending.get() {
                None => "none".into(),
                Some(Ok(lock)) => granted(state, lock),
                Some(Err(error)) => error_line(&error),
            },
            None => "err no-such-pending".into(),
        },
        ["drop-pending", p] => {
            let slot = state.pending.get_mut(number(p)?.checked_sub(1)?)?;
            drop(slot.take());
            "dropped".into()
        }
        ["trap"] => panic!("trap requested"),
        _ => {
            return revoke::execute(words, state)
                .or_else(|| state.role.execute(words))
                .or_else(|| permits::execute(words, state))
                .or_else(|| inspect::execute(words))
                .or_else(|| guarded::execute(words, state))
                .or_else(|| election::execute(words, state));
        }
    };
    Some(line)
}

/// Waits on `ready` (a handle's `subscribe` pollable), then at once asks
/// `try-acquire` for the lock `ack`, so the host sees when the guest woke;
/// returns that lock, if granted, for the caller to keep (the host sees it
/// held).
fn notify(ready: wasip2::io::poll::Pollable, ack: &str) -> Option<Lock> {
    ready.block();
    let acked = locks::try_acquire(ack, Mode::Exclusive);
    drop(ready);
    acked.ok().flatten()
}

/// `loop-many`: COUNT rounds of take all, bump FILE, release all.
fn loop_many(count: u64, timeout_ms: Option<u64>, file: &str, requests: &[Request]) -> String {
    for round in 0..count {
        let locks = match locks::acquire_many(requests, timeout_ms) {
            Ok(locks) => locks,
            Err(error) => return format!("failed at {round}: {}", error_line(&error)),
        };
        let value: u64 = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        if let Err(error) = std::fs::write(file, format!("{}\n", value + 1)) {
            return format!("failed at {round}: write {file}: {error}");
        }
        for lock in &locks {
            if let Err(error) = lock.release() {
                return format!("failed at {round}: {}", error_line(&error));
            }
        }
    }
    format!("looped {count}")
}

fn granted(state: &mut State, lock: Lock) -> String {
    let token = lock.fencing_token();
    format!("h{} token={token}", state.push(lock))
}

/// `MODE:NAME` words (MODE `x`/`exclusive` or `s`/`shared`).
fn requests_of(specs: &[&str]) -> Option<Vec<Request>> {
    specs
        .iter()
        .map(|spec| {
            let (mode, name) = spec.split_once(':')?;
            Some(Request {
                name: name.to_string(),
                mode: mode_of(mode)?,
            })
        })
        .collect()
}

fn mode_of(word: &str) -> Option<Mode> {
    match word {
        "exclusive" | "x" => Some(Mode::Exclusive),
        "shared" | "s" => Some(Mode::Shared),
        _ => None,
    }
}

/// Milliseconds, or `-` for none; `None` when malformed.
fn timeout_of(word: &str) -> Option<Option<u64>> {
    match word {
        "-" => Some(None),
        millis => millis.parse().ok().map(Some),
    }
}

fn number(word: &str) -> Option<usize> {
    word.trim_start_matches(['h', 'p']).parse().ok()
}

fn error_line(error: &Error) -> String {
    match error {
        Error::InvalidName(text) => format!("err invalid-name: {text}"),
        Error::Denied(text) => format!("err denied: {text}"),
        Error::Timeout => "err timeout".into(),
        Error::WouldDeadlock => "err would-deadlock".into(),
        Error::Lost => "err lost".into(),
        Error::Released => "err released".into(),
        Error::LimitExceeded(text) => format!("err limit-exceeded: {text}"),
        Error::Unavailable(text) => format!("err unavailable: {text}"),
        Error::InvalidRequest(text) => format!("err invalid-request: {text}"),
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
