//! Leader election (`wardlock:lock@0.2.2`'s `election`): "run this on exactly
//! one host". [`campaign`] waits until this instance leads; the
//! [`Leadership`] it returns follows a lock's loss rules (it reports `lost`
//! no later than another candidate can win) and its [`Leadership::term`] is
//! a fencing token, strictly greater than every earlier leader's.
//!
//! ```no_run
//! use wardlock_guest::v2::election::{campaign, observe};
//!
//! let leadership = campaign("jobs/compactor", "host-a:8080", None)?;
//! let lost = leadership.subscribe();   // ready once we no longer lead
//! // ... run the job, checking `lost.ready()` between steps ...
//! # drop(lost);
//! leadership.put("last-run", b"2026-11-25")?; // a guarded write, as the leader
//! leadership.resign()?;
//!
//! let observer = observe("jobs/compactor")?;
//! let leader = observer.leader()?;      // Some(LeaderInfo { value: "host-b:8080", .. })
//! # let _ = leader; Ok::<(), wardlock_guest::Error>(())
//! ```
//!
//! Interoperable with Curator's `LeaderLatch` on ZooKeeper and `etcdctl
//! elect` on etcd: their participants and wardlock's elect among each other.

use core::time::Duration;

use super::Subscription;
use super::bindings::wardlock::lock::election as raw;
use crate::{Error, Status};

/// Who leads an election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderInfo {
    /// Who leads, as the lock service records it.
    pub owner: String,
    /// The value the leader proclaimed.
    pub value: String,
    /// The leader's term (its fencing token).
    pub term: u64,
}

/// This instance's leadership of an election; dropping it resigns.
#[must_use = "the leadership is resigned as soon as it is dropped"]
pub struct Leadership {
    raw: raw::Leadership,
}

crate::shared::leadership_accessors!(Leadership, raw);

impl Leadership {
    /// A pollable ready once this no longer leads (suspended, lost or
    /// resigned), woken by the host. It borrows the leadership.
    pub fn subscribe(&self) -> Subscription<'_> {
        Subscription::new(self.raw.subscribe(), self)
    }

    /// Replaces the proclaimed value, while this leads.
    ///
    /// # Errors
    /// [`Error::Lost`] when it no longer leads; [`Error::Released`];
    /// [`Error::LimitExceeded`] for a value over 4096 bytes.
    pub fn proclaim(&self, value: &str) -> Result<(), Error> {
        Ok(self.raw.proclaim(value)?)
    }

    /// Writes `value` under `key` in the election name's guarded store,
    /// only while this leads (see [`super::guarded`]).
    ///
    /// # Errors
    /// As [`super::Guard::put`].
    pub fn put(&self, key: &str, value: &[u8]) -> Result<u64, Error> {
        Ok(self.raw.put(key, value)?)
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

/// Follows an election's leader.
pub struct Observer {
    raw: raw::Observer,
}

impl Observer {
    /// The leader now (`None`: nobody campaigns); [`Observer::subscribe`]
    /// compares against it from then on.
    ///
    /// # Errors
    /// [`Error::Unavailable`].
    pub fn leader(&self) -> Result<Option<LeaderInfo>, Error> {
        Ok(self.raw.leader()?.map(LeaderInfo::from))
    }

    /// A pollable ready once the leader (or its value or term) differs from
    /// the one [`Observer::leader`] last returned. It borrows the observer.
    pub fn subscribe(&self) -> Subscription<'_> {
        Subscription::new(self.raw.subscribe(), self)
    }
}

/// Campaigns for election `name` with `value`; waits until this instance
/// leads or `timeout` passes (`None` waits until elected).
///
/// # Errors
/// [`Error::Timeout`]; [`Error::InvalidName`], [`Error::Denied`] as for
/// locks; [`Error::LimitExceeded`]; [`Error::Unavailable`].
pub fn campaign(name: &str, value: &str, timeout: Option<Duration>) -> Result<Leadership, Error> {
    let timeout_ms = timeout.map(crate::lock::duration_to_millis);
    Ok(Leadership {
        raw: raw::campaign(name, value, timeout_ms)?,
    })
}

/// Who leads election `name` now.
///
/// # Errors
/// [`Error::InvalidName`], [`Error::Denied`], [`Error::Unavailable`].
pub fn leader(name: &str) -> Result<Option<LeaderInfo>, Error> {
    Ok(raw::leader(name)?.map(LeaderInfo::from))
}

/// An observer of election `name`.
///
/// # Errors
/// [`Error::InvalidName`], [`Error::Denied`], [`Error::LimitExceeded`].
pub fn observe(name: &str) -> Result<Observer, Error> {
    Ok(Observer {
        raw: raw::observe(name)?,
    })
}
