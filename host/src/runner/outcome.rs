//! How a guest instance ended.

use std::time::Duration;

/// The end of one guest instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `run` returned success (or the guest exited with code 0).
    Success,
    /// The guest exited with a non-zero code (`wasi:cli/exit`, or `run` returned
    /// an error, reported as code 1).
    Exit(i32),
    /// The guest trapped; the text says why.
    Trap(String),
    /// The instance ran past its deadline and was stopped.
    TimedOut(Duration),
    /// The instance held a lock longer than its hold lease and was stopped.
    LeaseExpired(Duration),
    /// The host could not instantiate or run the instance.
    HostError(String),
    /// A lock declared for the instance (`--hold`) was lost, and the
    /// instance was stopped at once; the text is the lock's name.
    LockLost(String),
}

impl Outcome {
    /// True for [`Outcome::Success`].
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Success)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Success => f.write_str("ok"),
            Outcome::Exit(code) => write!(f, "exited with code {code}"),
            Outcome::Trap(why) => write!(f, "trapped: {why}"),
            Outcome::TimedOut(limit) => write!(f, "timed out after {:.3}s", limit.as_secs_f64()),
            Outcome::LeaseExpired(limit) => write!(
                f,
                "held a lock longer than the {:.3}s hold lease; the lock was taken back",
                limit.as_secs_f64()
            ),
            Outcome::HostError(why) => write!(f, "host error: {why}"),
            Outcome::LockLost(name) => {
                write!(f, "lost the declared lock {name}: the instance was stopped")
            }
        }
    }
}

/// One finished instance: how it ended and what it printed (when captured).
#[derive(Debug, Clone)]
pub struct InstanceReport {
    /// The instance's index (0-based) among those the runner started.
    pub instance: usize,
    /// How the instance ended.
    pub outcome: Outcome,
    /// Captured standard output; empty when stdio is inherited.
    pub stdout: Vec<u8>,
    /// Captured standard error; empty when stdio is inherited.
    pub stderr: Vec<u8>,
    /// Wall-clock time from start to end.
    pub elapsed: Duration,
}

impl InstanceReport {
    /// The captured stdout as text (lossy).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The captured stderr as text (lossy).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}
