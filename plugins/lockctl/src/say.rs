//! The probes' one way of printing (`lockctl`, and `lockctl2` through a
//! `#[path]` module): every line is flushed at once, so it is out before the
//! probe traps or exits.

use std::io::Write;

/// Prints one line and flushes it, so it is out before a trap or exit.
pub(crate) fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    // A probe whose stdout is gone cannot report anything; stop it loudly.
    if writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(3);
    }
}
