//! `lockctl2`'s semaphore commands (`acquire-permit`, `try-acquire-permit`,
//! the `permit` resource). Permits are numbered q1, q2… in the order
//! obtained.
//!
//! | command                                          | prints                                   |
//! |--------------------------------------------------|------------------------------------------|
//! | `permit PERMITS TIMEOUT NAME`                    | `q<N> token=<T>` or an error line        |
//! | `try-permit PERMITS NAME`                        | `q<N> token=<T>`, `none` or an error line |
//! | `release-permit Q` / `drop-permit Q`             | `ok` or an error line / `dropped`        |
//! | `permit-status Q`                                | `held`, `suspended`, `lost` or `released` |
//! | `permit-info Q`                                  | `<name> permits=<P> token=<T>`           |
//! | `notify-permit Q ACK`                            | `woke <status>` (as `notify`)            |
//! | `loop-permit COUNT PERMITS TIMEOUT HOLD_MS NAME` | `looped <COUNT>` or `failed at <i>: …`   |
//!
//! `loop-permit` takes a permit of NAME COUNT times, checks that it is `held`
//! and that its token is greater than the previous one, holds it HOLD_MS
//! milliseconds (work, so that holders overlap) and releases it; the host
//! side counts the holders.

use super::bindings::wardlock::lock::locks::{self, Permit};
use super::bindings::wardlock::lock::types::Status;
use super::{State, error_line, notify, status_name, timeout_of};

/// Runs one permit command; `None` when it is not one, or malformed.
pub(crate) fn execute(words: &[&str], state: &mut State) -> Option<String> {
    let line = match words {
        ["permit", permits, timeout, name] => {
            match locks::acquire_permit(name, permits.parse().ok()?, timeout_of(timeout)?) {
                Ok(permit) => granted(state, permit),
                Err(error) => error_line(&error),
            }
        }
        ["try-permit", permits, name] => {
            match locks::try_acquire_permit(name, permits.parse().ok()?) {
                Ok(Some(permit)) => granted(state, permit),
                Ok(None) => "none".into(),
                Err(error) => error_line(&error),
            }
        }
        ["release-permit", q] => match state.permit(number(q)?) {
            Some(permit) => match permit.release() {
                Ok(()) => "ok".into(),
                Err(error) => error_line(&error),
            },
            None => "err no-such-permit".into(),
        },
        ["drop-permit", q] => {
            let slot = state.permits.get_mut(number(q)?.checked_sub(1)?)?;
            drop(slot.take());
            "dropped".into()
        }
        ["permit-status", q] => match state.permit(number(q)?) {
            Some(permit) => status_name(permit.status()).into(),
            None => "err no-such-permit".into(),
        },
        ["permit-info", q] => match state.permit(number(q)?) {
            Some(p) => format!(
                "{} permits={} token={}",
                p.name(),
                p.permits(),
                p.fencing_token()
            ),
            None => "err no-such-permit".into(),
        },
        ["notify-permit", q, ack] => match state.permit(number(q)?) {
            Some(permit) => {
                let acked = notify(permit.subscribe(), ack);
                let line = format!("woke {}", status_name(permit.status()));
                state.keep(acked);
                line
            }
            None => "err no-such-permit".into(),
        },
        ["loop-permit", count, permits, timeout, hold_ms, name] => loop_permit(
            count.parse().ok()?,
            permits.parse().ok()?,
            timeout_of(timeout)?,
            std::time::Duration::from_millis(hold_ms.parse().ok()?),
            name,
        ),
        _ => return None,
    };
    Some(line)
}

/// `loop-permit`: COUNT rounds of take a permit, check it, hold it, release it.
fn loop_permit(
    count: u64,
    permits: u32,
    timeout_ms: Option<u64>,
    hold: std::time::Duration,
    name: &str,
) -> String {
    let mut last = 0;
    for round in 0..count {
        let permit = match locks::acquire_permit(name, permits, timeout_ms) {
            Ok(permit) => permit,
            Err(error) => return format!("failed at {round}: {}", error_line(&error)),
        };
        let token = permit.fencing_token();
        if token <= last {
            return format!("failed at {round}: token {token} after {last}");
        }
        last = token;
        if permit.status() != Status::Held {
            return format!("failed at {round}: {}", status_name(permit.status()));
        }
        std::thread::sleep(hold);
        if let Err(error) = permit.release() {
            return format!("failed at {round}: {}", error_line(&error));
        }
    }
    format!("looped {count}")
}

fn granted(state: &mut State, permit: Permit) -> String {
    let token = permit.fencing_token();
    state.permits.push(Some(permit));
    format!("q{} token={token}", state.permits.len())
}

fn number(word: &str) -> Option<usize> {
    word.trim_start_matches('q').parse().ok()
}
