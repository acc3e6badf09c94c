//! When the host last heard from its lock service, and what that allows it to
//! claim: one clock for every remote engine (a ZooKeeper session, an etcd
//! lease). Written for ZooKeeper first; etcd's lease keeper uses it the same
//! way, with the lease's TTL less a margin as the timeout.
//!
//! On ZooKeeper, the client library expires a session locally only 7/5 × the negotiated timeout
//! after it last heard from the server; the server expires it at 1 ×, and then
//! another host may be granted our locks. So wardlock keeps its own clock, as
//! Curator's simulated expiry does: a heartbeat request is sent every tenth of the
//! session timeout, and the *send* time of every answered one is "last heard" (the
//! server saw the request no earlier than that, so it cannot have expired the
//! session before `last heard + timeout`).
//!
//! The rule, for a grant of a live session:
//! - `held` while the client is connected and something was heard within the last
//!   fifth of the session timeout;
//! - `suspended` when the client reports the connection lost, or after a fifth of
//!   the session timeout of silence (so within 3/10 of it after the cut, less than
//!   the client's own connection timeout of 2/5);
//! - `lost` from the moment the session timeout has passed since last heard: the
//!   session is then ended locally for good (closed, its grants never come back).
//!
//! Every health this clock computes is also published ([`Liveness::watch_health`]),
//! so subscribers to a grant's status are woken by the computation that noticed
//! the change (the session monitor's, on each heartbeat tick, each client
//! state change and at [`Liveness::deadline`]), not by polling of their own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::{GrantStatus, StatusChange, settled};

pub use crate::handoff::SessionHealth;

/// A session's "last heard" clock and its local end.
pub struct Liveness {
    start: Instant,
    /// Milliseconds after `start` of the send time of the last answered request.
    heard_ms: AtomicU64,
    timeout: Duration,
    ended: watch::Sender<bool>,
    /// The health last computed, for subscribers.
    health: watch::Sender<SessionHealth>,
}

impl Liveness {
    /// A clock for a session with the negotiated `timeout`, heard from at `connected`
    /// (the time its connect request was sent, or earlier).
    pub fn new(timeout: Duration, connected: Instant) -> Self {
        Liveness {
            start: connected,
            heard_ms: AtomicU64::new(0),
            timeout,
            ended: watch::Sender::new(false),
            health: watch::Sender::new(SessionHealth::Live),
        }
    }

    /// The negotiated session timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How often to send a heartbeat.
    pub fn heartbeat_interval(&self) -> Duration {
        (self.timeout / 10).max(Duration::from_millis(20))
    }

    /// Records that a request sent at `sent` was answered.
    pub fn heard(&self, sent: Instant) {
        let ms = sent.saturating_duration_since(self.start).as_millis();
        self.heard_ms
            .fetch_max(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The time since the last answered request was sent.
    pub fn silence(&self, now: Instant) -> Duration {
        let heard = self.start + Duration::from_millis(self.heard_ms.load(Ordering::Relaxed));
        now.saturating_duration_since(heard)
    }

    /// The moment the session ends locally unless something is heard before:
    /// last heard + the timeout. A session's watcher wakes at it as well as
    /// on its heartbeat ticks, so subscribers learn `lost` at the moment the
    /// clock allows no more, not up to a tick later: on ZooKeeper the server
    /// may expire the session (and grant another host) from that moment on.
    pub fn deadline(&self) -> Instant {
        self.start + Duration::from_millis(self.heard_ms.load(Ordering::Relaxed)) + self.timeout
    }

    /// What may be claimed at `now`, given whether the client says it is connected.
    /// Ends the session locally once the server may have expired it.
    pub fn health(&self, connected: bool, now: Instant) -> SessionHealth {
        if *self.ended.borrow() {
            return SessionHealth::Ended;
        }
        let silence = self.silence(now);
        if silence >= self.timeout {
            self.end();
            SessionHealth::Ended
        } else {
            let health = if !connected || silence > self.timeout / 5 {
                SessionHealth::Suspended
            } else {
                SessionHealth::Live
            };
            self.publish(health);
            health
        }
    }

    /// Ends the session locally (idempotent).
    pub fn end(&self) {
        self.ended
            .send_if_modified(|ended| !std::mem::replace(ended, true));
        self.publish(SessionHealth::Ended);
    }

    /// Publishes `health` to [`Liveness::watch_health`] subscribers if it is
    /// news. Once ended, always ended.
    fn publish(&self, health: SessionHealth) {
        self.health.send_if_modified(|last| {
            let news = *last != health && *last != SessionHealth::Ended;
            if news {
                *last = health;
            }
            news
        });
    }

    /// The health last computed (by [`Liveness::health`] or [`Liveness::end`]),
    /// changing as each computation finds it changed.
    pub fn watch_health(&self) -> watch::Receiver<SessionHealth> {
        self.health.subscribe()
    }

    /// True once ended locally.
    pub fn is_ended(&self) -> bool {
        *self.ended.borrow()
    }

    /// Resolves once the session is ended locally.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    pub async fn until_ended(&self) {
        let mut ended = self.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
    }
}

/// What a backend reports for health checks, given its current session's
/// health (`None`: no session) and whether the service was found unreachable.
pub fn backend_health(session: Option<SessionHealth>, unreachable: bool) -> crate::Health {
    use crate::Health as Backend;
    match session {
        Some(SessionHealth::Live) => Backend::Connected,
        Some(SessionHealth::Suspended) => Backend::Connecting,
        Some(SessionHealth::Ended) => Backend::Down,
        None if unreachable => Backend::Down,
        // Not connected yet, or a new session is being made.
        None => Backend::Connecting,
    }
}

/// What a grant guarantees, given its session's health.
pub fn grant_status(health: SessionHealth) -> GrantStatus {
    match health {
        SessionHealth::Live => GrantStatus::Held,
        SessionHealth::Suspended => GrantStatus::Suspended,
        SessionHealth::Ended => GrantStatus::Lost,
    }
}

/// The [`StatusChange`] of a grant whose session publishes `health` (`None`:
/// the session is gone) and which ends when `alive`'s sender is dropped: woken
/// by the session's own health computations and by the grant's end, never by
/// polling.
pub fn status_change(
    mut alive: watch::Receiver<()>,
    health: Option<watch::Receiver<SessionHealth>>,
    seen: GrantStatus,
) -> StatusChange {
    let Some(mut health) = health else {
        return settled(GrantStatus::Lost, seen);
    };
    Box::pin(async move {
        loop {
            let now = grant_status(*health.borrow_and_update());
            if now != seen {
                return now;
            }
            tokio::select! {
                // `alive` is never sent to: this is the grant ending.
                _ = alive.changed() => return GrantStatus::Released,
                ended = health.changed() => if ended.is_err() {
                    // The session itself is gone: lost, then released once
                    // the grant goes.
                    if seen != GrantStatus::Lost {
                        return GrantStatus::Lost;
                    }
                    let _ = alive.changed().await;
                    return GrantStatus::Released;
                },
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspended_after_a_fifth_lost_at_the_timeout_never_back() {
        let start = Instant::now();
        let live = Liveness::new(Duration::from_secs(10), start);
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(live.health(true, at(1_000)), SessionHealth::Live);
        assert_eq!(live.health(false, at(1_000)), SessionHealth::Suspended);
        assert_eq!(live.health(true, at(2_001)), SessionHealth::Suspended);
        live.heard(at(2_000));
        assert_eq!(live.health(true, at(3_000)), SessionHealth::Live);
        assert_eq!(live.health(true, at(11_999)), SessionHealth::Suspended);
        assert_eq!(live.health(true, at(12_000)), SessionHealth::Ended);
        live.heard(at(12_000));
        assert_eq!(
            live.health(true, at(12_001)),
            SessionHealth::Ended,
            "ended for good"
        );
        assert!(live.is_ended());
    }

    #[test]
    fn each_computed_change_is_published_and_ended_stays() {
        let start = Instant::now();
        let live = Liveness::new(Duration::from_secs(10), start);
        let mut health = live.watch_health();
        assert_eq!(*health.borrow_and_update(), SessionHealth::Live);
        live.health(true, start + Duration::from_millis(100));
        assert!(!health.has_changed().expect("open"), "no news");
        live.health(false, start + Duration::from_millis(200));
        assert!(health.has_changed().expect("open"));
        assert_eq!(*health.borrow_and_update(), SessionHealth::Suspended);
        live.end();
        assert_eq!(*health.borrow_and_update(), SessionHealth::Ended);
        live.heard(start + Duration::from_millis(300));
        live.health(true, start + Duration::from_millis(300));
        assert_eq!(*health.borrow(), SessionHealth::Ended);
    }

    #[test]
    fn an_old_answer_does_not_move_the_clock_back() {
        let start = Instant::now();
        let live = Liveness::new(Duration::from_secs(4), start);
        live.heard(start + Duration::from_millis(900));
        live.heard(start + Duration::from_millis(300));
        assert_eq!(
            live.silence(start + Duration::from_millis(1_000)),
            Duration::from_millis(100)
        );
    }
}
