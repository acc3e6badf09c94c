//! Revocation commands of `lockctl2` (see the table in `main.rs`).

use super::bindings::wardlock::lock::locks;
use super::bindings::wardlock::lock::types::Mode;
use super::{State, error_line, number};

/// Runs a revocation command; `None` when `words` is not one (or malformed).
///
/// - `revoke NAME`: `request-revocation`; prints `asked <N>` or an error line.
/// - `revoked N`: handle N's `revocation-requested`: `true` or `false`.
/// - `await-revocation N ACK MS`: waits on handle N's `subscribe-revocation`
///   pollable and a timer of MS milliseconds; when revocation comes first it
///   asks `try-acquire` for the lock ACK at once (so the host sees when the
///   guest woke; a granted ACK is kept as the next handle) and prints
///   `revoked`, else `timer`.
pub(super) fn execute(words: &[&str], state: &mut State) -> Option<String> {
    let line = match words {
        ["revoke", name] => match locks::request_revocation(name) {
            Ok(asked) => format!("asked {asked}"),
            Err(error) => error_line(&error),
        },
        ["revoked", n] => match state.lock(number(n)?) {
            Some(lock) => lock.revocation_requested().to_string(),
            None => "err no-such-handle".into(),
        },
        ["await-revocation", n, ack, ms] => {
            let millis: u64 = ms.parse().ok()?;
            let Some(lock) = state.lock(number(n)?) else {
                return Some("err no-such-handle".into());
            };
            let revoked = lock.subscribe_revocation();
            let timer = wasip2::clocks::monotonic_clock::subscribe_duration(
                millis.saturating_mul(1_000_000),
            );
            let ready = wasip2::io::poll::poll(&[&revoked, &timer]);
            drop(revoked);
            if ready.contains(&0) {
                if let Ok(Some(acked)) = locks::try_acquire(ack, Mode::Exclusive) {
                    state.push(acked);
                }
                "revoked".into()
            } else {
                "timer".into()
            }
        }
        _ => return None,
    };
    Some(line)
}
