//! The exclusion check every system runs in its critical section, and how each
//! op picks its mode. `plugins/bench-guest` implements the same protocol and
//! draws from the same [`Plan`] (one source file), so native and guest clients
//! do identical work under the lock.
//!
//! A shared counter file (20 zero-padded digits, rewritten in place) holds an
//! even number between critical sections. A writer reads `v` (must be even), writes `v + 1`, reads it back (must be
//! `v + 1`) and writes `v + 2`; a reader reads twice (even, unchanged). Any other
//! outcome means two conflicting holders overlapped. At the end the file must
//! hold twice the number of writes; every lost update is a violation too.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use wardlock_host::Mode;

#[path = "../../../../plugins/bench-guest/src/plan.rs"]
#[allow(
    dead_code,
    reason = "shared with bench-guest, which parses what this side formats"
)]
mod plan;

pub(crate) use plan::Plan;

/// The mode of op `index` of `plan` (the guest draws the same).
pub(crate) fn mode(plan: Plan, index: u64) -> Mode {
    if plan.writes(index) {
        Mode::Exclusive
    } else {
        Mode::Shared
    }
}

/// Width of the counter: a zero-padded decimal, rewritten in place (no
/// truncation), so every read sees either a whole value or a torn one.
const WIDTH: usize = 20;

/// An open counter file.
///
/// Every read and write is one job on tokio's blocking pool, as `tokio::fs`
/// does and as wasmtime-wasi does for a guest's file operations: native and
/// guest critical sections do the same work the same way.
pub(crate) struct Counter {
    file: Arc<File>,
}

impl Counter {
    /// Opens the counter at `path` (created by [`reset`]).
    ///
    /// # Errors
    /// When it cannot be opened.
    pub(crate) fn open(path: &Path) -> anyhow::Result<Counter> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(Counter {
            file: Arc::new(file),
        })
    }

    /// Runs the check under a lock held in `mode`; returns the violations seen.
    ///
    /// # Errors
    /// When the file cannot be read or written.
    pub(crate) async fn critical_section(&self, mode: Mode) -> anyhow::Result<u64> {
        let mut violations = 0;
        let (first, bad) = self.read().await?;
        violations += u64::from(bad) + first % 2;
        match mode {
            Mode::Exclusive => {
                self.write(first + 1).await?;
                let (back, bad) = self.read().await?;
                violations += u64::from(bad || back != first + 1);
                self.write(first + 2).await?;
            }
            Mode::Shared => {
                let (second, bad) = self.read().await?;
                violations += u64::from(bad || second != first);
            }
        }
        Ok(violations)
    }

    /// `(value, malformed)`.
    async fn read(&self) -> anyhow::Result<(u64, bool)> {
        let file = self.file.clone();
        let buf = tokio::task::spawn_blocking(move || {
            let mut buf = [0u8; WIDTH];
            file.read_exact_at(&mut buf, 0).map(|()| buf)
        })
        .await
        .context("blocking pool")?
        .context("reading the counter")?;
        Ok(parse(&buf))
    }

    async fn write(&self, value: u64) -> anyhow::Result<()> {
        let file = self.file.clone();
        tokio::task::spawn_blocking(move || {
            file.write_all_at(format!("{value:0WIDTH$}").as_bytes(), 0)
        })
        .await
        .context("blocking pool")?
        .context("writing the counter")
    }
}

fn parse(bytes: &[u8]) -> (u64, bool) {
    std::str::from_utf8(bytes)
        .ok()
        .filter(|t| t.len() == WIDTH && t.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|t| t.parse().ok())
        .map_or((0, true), |v| (v, false))
}

/// Creates (or rewrites) a counter file holding 0.
///
/// # Errors
/// When it cannot be written.
pub(crate) fn reset(path: &Path) -> anyhow::Result<()> {
    std::fs::write(path, format!("{:0WIDTH$}", 0))
        .with_context(|| format!("writing {}", path.display()))
}

/// Lost updates: how far the final count is from `2 × writes`, in writes.
///
/// # Errors
/// When the file cannot be read.
pub(crate) fn lost_updates(path: &Path, writes: u64) -> anyhow::Result<u64> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    match parse(&bytes) {
        (_, true) => Ok(writes.max(1)),
        (value, false) => Ok(value.abs_diff(2 * writes).div_ceil(2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_clean_history_has_no_violation() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("count");
        reset(&file).unwrap();
        let counter = Counter::open(&file).unwrap();
        for mode in [Mode::Exclusive, Mode::Shared, Mode::Exclusive] {
            assert_eq!(counter.critical_section(mode).await.unwrap(), 0);
        }
        assert_eq!(lost_updates(&file, 2).unwrap(), 0);
        assert_eq!(lost_updates(&file, 3).unwrap(), 1);
        std::fs::write(&file, format!("{:020}", 3)).unwrap();
        assert_eq!(counter.critical_section(Mode::Shared).await.unwrap(), 1);
        std::fs::write(&file, "12").unwrap();
        assert_eq!(lost_updates(&file, 1).unwrap(), 1);
    }
}
