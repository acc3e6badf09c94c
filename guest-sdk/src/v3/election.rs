//! Leader election through `wardlock:lock@0.3.0`'s `election` (0.2.2's
//! elections, awaited): "run this on exactly one host". [`campaign`] awaits
//! the lead; the [`Leadership`] follows a lock's loss rules and its term is
//! a fencing token; [`observe`] is a stream of leaders.
//!
//! ```no_run
//! # async fn f() -> Result<(), wardlock_guest::Error> {
//! use wardlock_guest::v3::election::{campaign, observe};
//!
//! let leadership = campaign("jobs/compactor", "host-a:8080", None).await?;
//! let lost = leadership.not_held(); // race it against the job
//! leadership.put("last-run", b"2026-12-08").await?; // a guarded write, as the leader
//! leadership.resign()?;
//! # drop(lost);
//!
//! let mut leaders = observe("jobs/compactor")?;
//! while let Some(leader) = leaders.next().await {
//!     println!("leader now: {leader:?}"); // None: nobody campaigns
//! #   break;
//! }
//! # Ok(()) }
//! ```
//!
//! Interoperable with 0.2.2's elections, Curator's `LeaderLatch` on
//! ZooKeeper and `etcdctl elect` on etcd: all their candidates compete in
//! one election.

use core::future::IntoFuture;
use core::time::Duration;

use super::bindings::wardlock::lock::election as raw;
use super::{Error, NotHeld, Status};
pub use crate::v2::election::LeaderInfo;
use wit_bindgen::StreamReader;

/// This instance's leadership of an election; dropping it resigns (so does
/// the instance's end).
#[must_use = "the leadership is resigned as soon as it is dropped"]
pub struct Leadership {
    raw: raw::Leadership,
}

crate::shared::leadership_accessors!(Leadership, raw);

impl Leadership {
    /// A future that completes once this no longer leads, with the status
    /// then (as [`super::Guard::not_held`]); resigning completes it with
    /// `Released`. It does not borrow the leadership.
    pub fn not_held(&self) -> NotHeld {
        NotHeld::new(Box::pin(self.raw.not_held().into_future()))
    }

    /// Replaces the proclaimed value, while this leads.
    ///
    /// # Errors
    /// [`Error::Lost`] when it no longer leads; [`Error::Released`];
    /// [`Error::LimitExceeded`] for a value over 4096 bytes.
    pub async fn proclaim(&self, value: &str) -> Result<(), Error> {
        Ok(self.raw.proclaim(value.to_string()).await?)
    }

    /// Writes `value` under `key` in the election name's guarded store,
    /// only while this leads (see [`super::guarded`]).
    ///
    /// # Errors
    /// As [`super::Guard::put`].
    pub async fn put(&self, key: &str, value: &[u8]) -> Result<u64, Error> {
        Ok(self.raw.put(key.to_string(), value.to_vec()).await?)
    }

    /// Steps down now: the next candidate leads.
    ///
    /// # Errors
    /// [`Error::Lost`] if the leadership had been lost; [`Error::Released`]
    /// if resigned already.
    pub fn resign(self) -> Result<(), Error> {
        Ok(self.raw.resign()?)
    }
}

/// An election's leaders as they change ([`observe`]); it counts as a
/// handle until dropped.
pub struct Leaders {
    raw: StreamReader<Option<raw::LeaderInfo>>,
}

impl Leaders {
    /// The next leader: first the leader when the stream opened, then each
    /// change of leader, term or value (`Some(None)`: nobody campaigns).
    /// `None` once the stream ended: the lock service failed ([`leader`]
    /// says why; observe again to go on).
    pub async fn next(&mut self) -> Option<Option<LeaderInfo>> {
        self.raw
            .next()
            .await
            .map(|leader| leader.map(LeaderInfo::from))
    }
}

impl core::fmt::Debug for Leaders {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Leaders")
    }
}

/// Campaigns for election `name` with `value`; waits until this instance
/// leads or `timeout` passes (`None` waits until elected). Dropping the
/// future withdraws the candidate.
///
/// # Errors
/// [`Error::Timeout`]; [`Error::InvalidName`], [`Error::Denied`] as for
/// locks; [`Error::LimitExceeded`]; [`Error::Unavailable`].
pub async fn campaign(
    name: &str,
    value: &str,
    timeout: Option<Duration>,
) -> Result<Leadership, Error> {
    let timeout_ms = timeout.map(crate::lock::duration_to_millis);
    let raw = raw::campaign(name.to_string(), value.to_string(), timeout_ms).await?;
    Ok(Leadership { raw })
}

/// Who leads election `name` now.
///
/// # Errors
/// [`Error::InvalidName`], [`Error::Denied`], [`Error::Unavailable`].
pub async fn leader(name: &str) -> Result<Option<LeaderInfo>, Error> {
    Ok(raw::leader(name.to_string()).await?.map(LeaderInfo::from))
}

/// The leaders of election `name` as they change: the leader now, then
/// each change, as the lock service reports it (no polling).
///
/// # Errors
/// [`Error::InvalidName`], [`Error::Denied`], [`Error::LimitExceeded`].
pub fn observe(name: &str) -> Result<Leaders, Error> {
    Ok(Leaders {
        raw: raw::observe(name)?,
    })
}
