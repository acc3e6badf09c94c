//! The guarded store (0.2.2): writes that commit only while their lock holds.
//!
//! | command                 | prints                                          |
//! |-------------------------|-------------------------------------------------|
//! | `put N KEY VALUE`       | `rev=<R>` or an error line                      |
//! | `del N KEY`             | `true`/`false` or an error line                 |
//! | `read NAME KEY`         | `none`, `<VALUE> token=<T> rev=<R>` or an error |
//! | `keys NAME PREFIX LIMIT`| the keys, space-separated, then `.` (PREFIX `-`: none) |
//! | `wait-file PATH`        | `file` once PATH exists (a test's go-ahead)     |
//!
//! N is a lock handle (`h1`); VALUE is text (written as its UTF-8 bytes).
//! `wait-file` lets a test hold the guest between two commands: while it
//! waits, the guest's host may be paused, its session expire and another
//! host take the lock; the next `put` then shows what the store allows.

use super::bindings::wardlock::lock::guarded;
use super::{State, error_line, number};

/// Runs the command; `None` when `words` is not one (or malformed).
pub(super) fn execute(words: &[&str], state: &State) -> Option<String> {
    let line = match words {
        ["put", n, key, value] => match state.lock(number(n)?) {
            Some(lock) => match guarded::put(lock, key, value.as_bytes()) {
                Ok(revision) => format!("rev={revision}"),
                Err(error) => error_line(&error),
            },
            None => "err no-such-handle".into(),
        },
        ["del", n, key] => match state.lock(number(n)?) {
            Some(lock) => match guarded::delete(lock, key) {
                Ok(existed) => existed.to_string(),
                Err(error) => error_line(&error),
            },
            None => "err no-such-handle".into(),
        },
        ["read", name, key] => match guarded::get(name, key) {
            Ok(None) => "none".into(),
            Ok(Some(entry)) => format!(
                "{} token={} rev={}",
                String::from_utf8_lossy(&entry.value),
                entry.token,
                entry.revision
            ),
            Err(error) => error_line(&error),
        },
        ["keys", name, prefix, limit] => {
            let prefix = if *prefix == "-" { "" } else { prefix };
            keys_line(name, prefix, limit.parse().ok()?)
        }
        ["wait-file", path] => {
            while std::fs::metadata(path).is_err() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            "file".into()
        }
        _ => return None,
    };
    Some(line)
}

/// The keys of `name` starting with `prefix`, space-separated, then `.`.
fn keys_line(name: &str, prefix: &str, limit: u32) -> String {
    match guarded::keys(name, prefix, limit) {
        Ok(keys) => {
            let mut line = keys.join(" ");
            line.push_str(if keys.is_empty() { "." } else { " ." });
            line
        }
        Err(error) => error_line(&error),
    }
}
