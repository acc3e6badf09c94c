//! Watches that start now, confirmed, for a read to follow.
//!
//! etcd serves a watch whose start revision is not in the future from an
//! "unsynced" group that a background loop catches up every 100 ms: every
//! event it should carry, even one written after the watch was created, can
//! reach the watcher that late. Watching "from the revision after my read" is
//! exactly such a watch whenever any other write lands between the read and
//! the watch's creation, which on a busy cluster (and behind a cached lock,
//! whose host deletes its key the moment a waiter queues) is common: 3 to 9
//! turns in 100 of `wardlock-bench --workloads cached-handover` waited
//! ~100 ms that way.
//!
//! So every waiter here watches from etcd's current revision (a synced
//! watch, whose events come as they are written), waits for etcd to confirm
//! it, and only then reads the state it waits on. The read sees everything
//! before the watch began and the watch everything after, so nothing is
//! missed; a broken stream is opened again the same way, read again.

use etcd_client::{Client, WatchOptions, WatchStream};

/// Why a confirmed watch could not be had.
#[derive(Debug)]
pub(super) enum Unwatched {
    /// The request failed (see [`super::errors::retryable`] for which to repeat).
    Failed(etcd_client::Error),
    /// The stream ended or was cancelled before etcd confirmed the watch:
    /// open it again.
    Broken,
}

/// Opens a watch on `key` (every key under it when `prefix`) from etcd's
/// current revision and returns its stream once etcd has confirmed it: events
/// written after this returns are on the stream, promptly; read what you wait
/// on now.
///
/// # Errors
/// [`Unwatched::Failed`] when the request fails, [`Unwatched::Broken`] when the
/// stream ends before the confirmation.
///
/// # Cancellation safety
/// Cancel safe: a dropped call drops its stream, which ends the watch.
pub(super) async fn confirmed(
    client: &Client,
    key: impl Into<Vec<u8>>,
    prefix: bool,
) -> Result<WatchStream, Unwatched> {
    let mut client = client.clone();
    let options = if prefix {
        WatchOptions::new().with_prefix()
    } else {
        WatchOptions::new()
    };
    let mut stream = client
        .watch(key, Some(options))
        .await
        .map_err(Unwatched::Failed)?;
    loop {
        match stream.message().await {
            Ok(Some(answer)) if answer.canceled() => return Err(Unwatched::Broken),
            Ok(Some(answer)) if answer.created() => return Ok(stream),
            Ok(Some(_)) => {}
            Ok(None) => return Err(Unwatched::Broken),
            Err(error) => return Err(Unwatched::Failed(error)),
        }
    }
}
