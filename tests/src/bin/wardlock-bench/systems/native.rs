//! Native clients: the loop in Rust over a [`Locker`]; wardlock's backends
//! through [`LockSession`] (wardlock-native, memory-native) and the raw ZooKeeper
//! floor ([`super::zk_floor`]).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use wardlock_host::{GrantId, LockBackend, LockName, LockSession, Mode};

use super::{LoopResult, LoopSpec, join_all, unix_ns};
use crate::check;

/// Takes and releases one lock at a time.
pub(crate) trait Locker: Send + 'static {
    /// Waits until `lock` is held in `mode`.
    fn acquire(
        &mut self,
        lock: &LockName,
        mode: Mode,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Releases the lock taken last.
    fn release(&mut self) -> impl Future<Output = anyhow::Result<()>> + Send;
}

/// A wardlock backend session as a [`Locker`].
pub(crate) struct SessionLocker {
    session: Box<dyn LockSession>,
    held: Option<GrantId>,
}

impl SessionLocker {
    pub(crate) fn new(session: Box<dyn LockSession>) -> Self {
        SessionLocker {
            session,
            held: None,
        }
    }
}

impl Locker for SessionLocker {
    async fn acquire(&mut self, lock: &LockName, mode: Mode) -> anyhow::Result<()> {
        let grant = self
            .session
            .acquire(lock, mode, None)
            .await
            .with_context(|| format!("acquiring {lock}"))?;
        self.held = Some(grant.id);
        Ok(())
    }

    async fn release(&mut self) -> anyhow::Result<()> {
        let grant = self.held.take().context("release without a grant")?;
        self.session.release(grant)?;
        Ok(())
    }
}

/// `count` sessions on `backend`, one per client.
pub(crate) fn sessions(backend: &dyn LockBackend, count: usize) -> Vec<SessionLocker> {
    (0..count)
        .map(|i| SessionLocker::new(backend.open_session(&format!("wardlock-bench client {i}"))))
        .collect()
}

/// Runs one loop per locker, concurrently.
///
/// # Errors
/// The first client's error.
pub(crate) async fn run_all<L: Locker>(
    lockers: Vec<L>,
    specs: Vec<LoopSpec>,
    dir: PathBuf,
) -> anyhow::Result<Vec<LoopResult>> {
    let tasks = lockers
        .into_iter()
        .zip(specs)
        .map(|(locker, spec)| {
            let file = spec.check.as_ref().map(|f| dir.join(f));
            tokio::spawn(run_loop(locker, spec, file))
        })
        .collect();
    join_all(tasks).await
}

/// The client loop, as `bench-guest loop` does it.
async fn run_loop<L: Locker>(
    mut locker: L,
    spec: LoopSpec,
    file: Option<PathBuf>,
) -> anyhow::Result<LoopResult> {
    let counter = file.as_deref().map(check::Counter::open).transpose()?;
    let mut result = LoopResult {
        latencies_ns: Vec::with_capacity(usize::try_from(spec.ops).unwrap_or(0)),
        start_unix_ns: unix_ns(),
        ..LoopResult::default()
    };
    let mut previous = Instant::now();
    for index in 0..spec.ops {
        let mode = check::mode(spec.plan, index);
        locker.acquire(&spec.lock, mode).await?;
        if let Some(counter) = &counter {
            result.violations += counter.critical_section(mode).await?;
        }
        if mode == Mode::Exclusive {
            result.writes += 1;
        }
        locker.release().await?;
        let now = Instant::now();
        result
            .latencies_ns
            .push(u64::try_from(now.duration_since(previous).as_nanos()).unwrap_or(u64::MAX));
        previous = now;
    }
    result.end_unix_ns = unix_ns();
    Ok(result)
}
