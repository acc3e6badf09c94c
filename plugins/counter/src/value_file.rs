//! The integer file both file-based example guests (`counter`,
//! `readers-writers`) keep their value in. `readers-writers` includes this
//! file with `#[path]`, so the format is written once.

use std::fs;
use std::io::ErrorKind;

/// Reads the value; a missing or empty (whitespace-only) file is 0.
pub(crate) fn read_value(path: &str) -> Result<u64, String> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("reading {path}: {e}")),
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(0);
    }
    text.parse::<u64>()
        .map_err(|e| format!("{path} does not hold an integer ({text:?}): {e}"))
}

/// Replaces the file's contents with `value`.
pub(crate) fn write_value(path: &str, value: u64) -> Result<(), String> {
    fs::write(path, value.to_string()).map_err(|e| format!("writing {path}: {e}"))
}
