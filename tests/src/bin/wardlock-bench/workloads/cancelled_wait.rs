//! `wit-v3`'s cancelled-wait rows (issue 50: "a dropped acquire: the next
//! waiter is granted within one round trip of the drop"), on ZooKeeper and
//! etcd, three hosts (three backends, each its own sessions or lease, no
//! lock cache):
//!
//! - plain: host 1 holds the lock, host 3 waits behind it; host 1 releases;
//!   the time until host 3 holds;
//! - cancelled: the same with host 2's wait queued between them, dropped
//!   (as a 0.3 guest's cancelled `acquire` drops the backend's wait) at the
//!   moment host 1 releases; the time until host 3 holds.
//!
//! Were the dropped wait's node or key left for the server to expire, host 3
//! would wait a session for it; withdrawn as it is dropped, host 3 holds one
//! release-to-grant later, as in the plain case: `cancel_vs_plain_p50` near 1.
//! Each round's queue is checked empty afterwards. The waits queue is read
//! from the server's listing (`contenders`), looked at every millisecond:
//! setting up, not measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use wardlock_host::{LockBackend, LockName, LockSession, Mode};

/// How long any wait of a round may take: a hang guard, not a measurement.
const LIMIT: Duration = Duration::from_secs(30);

/// The median time (ms) from host 1's release to host 3's grant, plain and
/// with host 2's wait dropped at the release, over `rounds` interleaved
/// rounds on fresh names under `prefix`.
///
/// # Errors
/// When a host cannot take or list the lock, or a queue is not left empty.
pub(super) async fn release_to_next_grant(
    hosts: &[Arc<dyn LockBackend>; 3],
    prefix: &str,
    rounds: usize,
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let (mut plain, mut cancelled) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        plain.push(round(hosts, &lock(prefix, r, "plain")?, false).await?);
        cancelled.push(round(hosts, &lock(prefix, r, "cancelled")?, true).await?);
    }
    Ok((plain, cancelled))
}

fn lock(prefix: &str, r: usize, what: &str) -> anyhow::Result<LockName> {
    LockName::new(&format!("{prefix}/r{r}-{what}")).context("bench lock name")
}

/// One round: the release-to-grant time, in milliseconds.
async fn round(
    hosts: &[Arc<dyn LockBackend>; 3],
    name: &LockName,
    cancel: bool,
) -> anyhow::Result<f64> {
    let holder = hosts[0].open_session("holder");
    let held = holder.acquire(name, Mode::Exclusive, Some(LIMIT)).await?;
    let dropped = if cancel {
        let waiter: Arc<dyn LockSession> = Arc::from(hosts[1].open_session("dropped"));
        let wait = {
            let name = name.clone();
            tokio::spawn(async move {
                let _ = waiter.acquire(&name, Mode::Exclusive, Some(LIMIT)).await;
            })
        };
        queued(&*holder, name, 2).await?;
        Some(wait)
    } else {
        None
    };
    let next: Arc<dyn LockSession> = Arc::from(hosts[2].open_session("next"));
    let granted = {
        let (next, name) = (next.clone(), name.clone());
        tokio::spawn(async move {
            let grant = next.acquire(&name, Mode::Exclusive, Some(LIMIT)).await;
            (Instant::now(), grant)
        })
    };
    queued(&*holder, name, if cancel { 3 } else { 2 }).await?;
    let released = Instant::now();
    if let Some(wait) = dropped {
        wait.abort();
    }
    holder.release(held.id)?;
    let (at, grant) = granted.await.context("the next host's wait")?;
    let grant = grant.context("the next host's grant")?;
    let elapsed = at.duration_since(released).as_secs_f64() * 1e3;
    next.release(grant.id)?;
    queued(&*holder, name, 0).await?;
    Ok(elapsed)
}

/// Waits until the server lists `count` contenders of `name`.
async fn queued(observer: &dyn LockSession, name: &LockName, count: u32) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let listed = observer.contention()?.contenders(name, 0).await?;
        if listed.total == count {
            return Ok(());
        }
        if started.elapsed() > LIMIT {
            bail!("{name}: {} contenders, not {count}", listed.total);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
