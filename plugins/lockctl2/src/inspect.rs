//! `contenders NAME LIMIT` (0.2.1): who holds the lock NAME and who waits.
//!
//! Prints one line: the total, then ` | ` and one entry per listed contender,
//! `held` or `waits`, the mode (`x` or `s`), the fencing token or `-`, and
//! the owner: `2 | held x 7 plugin a | waits s - plugin b`. Or an error line.

use super::bindings::wardlock::lock::locks;
use super::bindings::wardlock::lock::types::Mode;
use super::error_line;

/// Runs the command; `None` when `words` is not one (or malformed).
pub(super) fn execute(words: &[&str]) -> Option<String> {
    let ["contenders", name, limit] = words else {
        return None;
    };
    let limit: u32 = limit.parse().ok()?;
    Some(match locks::contenders(name, limit) {
        Ok(queue) => {
            let mut line = queue.total.to_string();
            for c in &queue.contenders {
                let held = if c.holds { "held" } else { "waits" };
                let mode = match c.mode {
                    Mode::Exclusive => "x",
                    Mode::Shared => "s",
                };
                let token = c
                    .fencing_token
                    .map_or_else(|| "-".to_string(), |t| t.to_string());
                line.push_str(&format!(" | {held} {mode} {token} {}", c.owner));
            }
            line
        }
        Err(error) => error_line(&error),
    })
}
