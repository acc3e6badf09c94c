//! The mode a lock is requested and held in.

use core::fmt;

use crate::bindings::wardlock::lock::types::Mode as RawMode;

/// How a lock is held.
///
/// Mirrors the WIT `mode` enum; it is redefined here so that the public API
/// does not depend on the layout of generated code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One holder at a time; excludes shared holders too (a write lock).
    Exclusive,
    /// Many holders at once, excluded only by exclusive holders (a read lock).
    Shared,
}

impl From<RawMode> for Mode {
    fn from(raw: RawMode) -> Self {
        match raw {
            RawMode::Exclusive => Mode::Exclusive,
            RawMode::Shared => Mode::Shared,
        }
    }
}

impl From<Mode> for RawMode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Exclusive => RawMode::Exclusive,
            Mode::Shared => RawMode::Shared,
        }
    }
}

/// Formats the mode with its WIT name (`exclusive` or `shared`).
impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Exclusive => "exclusive",
            Mode::Shared => "shared",
        })
    }
}
