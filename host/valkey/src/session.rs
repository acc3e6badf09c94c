//! A host's session with the server: the key `ROOT/%session/HOST:GEN` with a
//! time-to-live of the session timeout, renewed every tenth of it, and the
//! host's own clock ([`Liveness`]) over it: "last heard" is the send time of
//! the last renewal the server answered, so the host tells its holders
//! `suspended`, then `lost`, no later than the server can let the key (and
//! with it every queue member of the session) expire.
//!
//! A session also ends when the server answers that its key is gone, and
//! when a new connection finds another server process than the session was
//! opened on (a restart, a failover: whatever the old one granted may be
//! unknown to the new one).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::time::Instant;
use wardlock_backend::handoff::{NodeSession, SessionHealth, WatchFuture};
use wardlock_backend::liveness::Liveness;
use wardlock_backend::name::LockName;

use crate::Shared;
use crate::layout::Layout;
use crate::link::{Confirmation, Link, Server, millis};
use crate::scripts;

/// One generation of the host's session.
pub(crate) struct HostSession {
    pub(crate) generation: u64,
    /// `HOST:GEN`, as members and keys name it.
    pub(crate) id: String,
    pub(crate) liveness: Liveness,
    /// The server process it lives on.
    pub(crate) run_id: String,
    connected: AtomicBool,
    server: Arc<Server>,
    runtime: tokio::runtime::Handle,
    session_key: String,
    held_key: String,
    layout: Layout,
    /// The members queued in this session and not removed yet, with their
    /// locks: what closing it removes (telling each one's next waiter).
    members: Mutex<HashMap<String, LockName>>,
    /// Whether [`HostSession::close`] ran: its removal is not repeated on
    /// drop (only members queued since, if any, are removed then).
    closed: AtomicBool,
}

impl HostSession {
    /// The health the clock allows now (and published to subscribers).
    pub(crate) fn health(&self) -> SessionHealth {
        self.liveness
            .health(self.connected.load(Ordering::Relaxed), Instant::now())
    }

    /// Ends the session here for good (its grants are lost).
    pub(crate) fn end(&self) {
        self.liveness.end();
    }

    pub(crate) fn session_key(&self) -> &str {
        &self.session_key
    }

    pub(crate) fn held_key(&self) -> &str {
        &self.held_key
    }

    /// Whether `link` reaches the server process this session lives on;
    /// when it does not (a restart, a failover), the session is over and
    /// is ended here.
    pub(crate) fn lives_on(&self, link: &Link) -> bool {
        let same = link.facts.run_id == self.run_id;
        if !same {
            self.end();
        }
        same
    }

    fn members(&self) -> std::sync::MutexGuard<'_, HashMap<String, LockName>> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes a member queued in this session.
    pub(crate) fn track(&self, member: &str, name: &LockName) {
        self.members().insert(member.to_owned(), name.clone());
    }

    /// Forgets a member removed from its queue.
    pub(crate) fn untrack(&self, member: &str) {
        self.members().remove(member);
    }

    /// Removes what the session still queued (each lock's next waiter is
    /// told) and deletes its key, now: what a host shutting down awaits, so
    /// other hosts get its locks before the process exits rather than when
    /// the key expires. What is removed here is not removed again on drop.
    ///
    /// # Cancellation safety
    /// Cancel safe in that nothing is left half-written on the server (each
    /// removal is one script); a cancelled close leaves the rest to the key's
    /// expiry.
    pub(crate) async fn close(&self) {
        if let Some(cleanup) = self.cleanup() {
            cleanup.run().await;
        }
    }

    /// What closing removes, taken out of the session; `None` when
    /// [`HostSession::close`] already took it and nothing was queued since.
    fn cleanup(&self) -> Option<Cleanup> {
        let members: Vec<(String, LockName)> = self.members().drain().collect();
        if self.closed.swap(true, Ordering::Relaxed) && members.is_empty() {
            return None;
        }
        Some(Cleanup {
            members,
            server: self.server.clone(),
            layout: self.layout.clone(),
            keys: [self.session_key.clone(), self.held_key.clone()],
        })
    }
}

/// A session's members and keys, to be removed from the server.
struct Cleanup {
    members: Vec<(String, LockName)>,
    server: Arc<Server>,
    layout: Layout,
    keys: [String; 2],
}

impl Cleanup {
    async fn run(self) {
        let Ok(link) = self.server.link().await else {
            return;
        };
        let mut conn = link.conn;
        for (member, name) in self.members {
            let _: Result<i64, _> = scripts::release(&self.layout, &name, &self.keys[1], &member)
                .invoke_async(&mut conn)
                .await;
        }
        let _: Result<i64, _> = redis::cmd("DEL")
            .arg(&self.keys)
            .query_async(&mut conn)
            .await;
    }
}

impl Drop for HostSession {
    /// Nobody uses the session any more: what [`HostSession::close`] did
    /// not remove yet is removed in the background, so nothing of it waits
    /// for the key to expire.
    fn drop(&mut self) {
        if let Some(cleanup) = self.cleanup() {
            self.runtime.spawn(cleanup.run());
        }
    }
}

impl NodeSession for HostSession {
    fn health(&self) -> SessionHealth {
        HostSession::health(self)
    }

    fn until_over(self: Arc<Self>) -> WatchFuture {
        Box::pin(async move { self.liveness.until_ended().await })
    }
}

impl Shared {
    /// The current session while it lives.
    pub(crate) fn live_session(&self) -> Option<Arc<HostSession>> {
        self.current()
            .as_ref()
            .filter(|s| !s.liveness.is_ended())
            .cloned()
    }

    /// The session of `generation` while it is the current one and lives.
    pub(crate) fn session_of(&self, generation: u64) -> Option<Arc<HostSession>> {
        self.live_session().filter(|s| s.generation == generation)
    }

    /// The session of `generation`, for a write fenced by it, while the
    /// host's clock vouches for it.
    ///
    /// # Errors
    /// `Lost` otherwise.
    pub(crate) fn vouched(
        &self,
        generation: u64,
    ) -> Result<Arc<HostSession>, wardlock_backend::BackendError> {
        self.session_of(generation)
            .filter(|s| s.health() != SessionHealth::Ended)
            .ok_or(wardlock_backend::BackendError::Lost)
    }

    /// The live session, or a new one (the next generation): its key set,
    /// its heartbeat and clock running, the host's subscription up.
    ///
    /// # Errors
    /// `Unavailable` when the server cannot be reached; `Refused` as
    /// [`Server::link`].
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub(crate) async fn session(
        self: &Arc<Self>,
    ) -> Result<Arc<HostSession>, wardlock_backend::BackendError> {
        let _opening = self.opening.lock().await;
        if let Some(session) = self.live_session() {
            return Ok(session);
        }
        let link = self.server.link().await?;
        let generation = self.current().as_ref().map_or(1, |s| s.generation + 1);
        let id = format!("{}:{generation}", self.host);
        let layout = &self.layout;
        let timeout = self.config.session_timeout;
        let sent = Instant::now();
        let () = self
            .server
            .query(
                &link,
                redis::cmd("SET")
                    .arg(layout.session_key(&id))
                    .arg(&self.owner)
                    .arg("PX")
                    .arg(millis(timeout)),
                "open a session",
            )
            .await?;
        // With Sentinel, a session opened there counts from its `SET` only
        // while a majority still names the server the primary.
        if self.server.confirm(&link).await != Confirmation::Primary {
            return Err(wardlock_backend::BackendError::Unavailable(
                "Valkey/Redis: a majority of the Sentinels no longer names the server connected to as the primary".into(),
            ));
        }
        if !self.wake.subscribed(timeout).await {
            return Err(wardlock_backend::BackendError::Unavailable(
                "Valkey/Redis: the host's wake-up channel could not be subscribed".into(),
            ));
        }
        let session = Arc::new(HostSession {
            generation,
            session_key: layout.session_key(&id),
            held_key: layout.held_key(&id),
            id,
            liveness: Liveness::new(timeout, sent),
            run_id: link.facts.run_id.clone(),
            connected: AtomicBool::new(true),
            server: self.server.clone(),
            runtime: self.runtime.clone(),
            layout: self.layout.clone(),
            members: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        });
        self.runtime
            .spawn(heartbeat(Arc::downgrade(self), Arc::downgrade(&session)));
        self.runtime.spawn(monitor(Arc::downgrade(&session)));
        *self.current() = Some(session.clone());
        Ok(session)
    }
}

/// Renews the session every tenth of its timeout; each answered renewal
/// moves the clock. Ends the session when the server says its key is gone
/// or the server process changed.
async fn heartbeat(shared: Weak<Shared>, session: Weak<HostSession>) {
    let interval = match session.upgrade() {
        Some(session) => session.liveness.heartbeat_interval(),
        None => return,
    };
    loop {
        tokio::time::sleep(interval).await;
        let (Some(shared), Some(session)) = (shared.upgrade(), session.upgrade()) else {
            return;
        };
        if session.liveness.is_ended() {
            return;
        }
        let sent = Instant::now();
        let renewed = tokio::time::timeout(interval, renew(&shared, &session)).await;
        match renewed {
            Ok(Renewal::Renewed) => {
                session.liveness.heard(sent);
                session.connected.store(true, Ordering::Relaxed);
            }
            Ok(Renewal::Gone(why)) => {
                tracing::warn!(session = %session.id, "Valkey/Redis session over: {why}");
                session.end();
                return;
            }
            Ok(Renewal::Failed) | Err(_) => session.connected.store(false, Ordering::Relaxed),
        }
        if session.health() == SessionHealth::Ended {
            session.end();
            return;
        }
    }
}

/// What one renewal found.
enum Renewal {
    Renewed,
    /// The session is over on the server (the reason).
    Gone(&'static str),
    Failed,
}

async fn renew(shared: &Shared, session: &HostSession) -> Renewal {
    let Ok(link) = shared.server.link().await else {
        return Renewal::Failed;
    };
    if !session.lives_on(&link) {
        return Renewal::Gone("the server process changed (a restart or a failover)");
    }
    let answer: Result<i64, _> = shared
        .server
        .invoke(
            &link,
            scripts::HEARTBEAT
                .key(session.session_key())
                .key(session.held_key())
                .arg(shared.layout.root())
                .arg(millis(shared.config.session_timeout)),
            "renew the session",
        )
        .await;
    match answer {
        // With Sentinel, a renewal counts only while a majority still names
        // this server the primary (see `sentinel`).
        Ok(1) => match shared.server.confirm(&link).await {
            Confirmation::Primary => Renewal::Renewed,
            Confirmation::Replaced => {
                Renewal::Gone("a majority of the Sentinels names another primary (a failover)")
            }
            Confirmation::Unknown => Renewal::Failed,
        },
        Ok(_) => Renewal::Gone("its key expired on the server"),
        Err(_) => Renewal::Failed,
    }
}

/// Computes the session's health at every heartbeat interval and at the
/// clock's end, so subscribers learn `suspended` and `lost` when the clock
/// allows, not a renewal later.
async fn monitor(session: Weak<HostSession>) {
    loop {
        let next = {
            let Some(session) = session.upgrade() else {
                return;
            };
            if session.health() == SessionHealth::Ended {
                session.end();
                return;
            }
            let now = Instant::now();
            let tick = now + session.liveness.heartbeat_interval();
            // Never a busy loop at the clock's end: at least a millisecond.
            tick.min(session.liveness.deadline())
                .max(now + std::time::Duration::from_millis(1))
        };
        tokio::time::sleep_until(next).await;
    }
}

/// A session's health for a hand-off task: through the trait object.
pub(crate) fn as_node_session(session: Arc<HostSession>) -> Arc<dyn NodeSession> {
    session
}
