//! The ZooKeeper session shared by every guest of a host, and its replacement
//! after expiry.
//!
//! Guests share one ZooKeeper session (servers cap connections per client
//! address); the host tracks which nodes belong to which guest. A session is
//! identified by a *generation*: when it expires, every grant of that generation is
//! lost and the next call connects a new session with a new generation.

mod connector;
mod left_behind;
pub(super) mod monitor;
pub(super) mod reconcile;
pub(super) mod reconnect;
pub(super) mod retry;
pub(super) mod shutdown;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::time::Instant;
use zookeeper_client::{Client, Error as ZkError, SessionState, StateWatcher};

use super::config::ZooKeeperConfig;
use wardlock_backend::BackendError;
use wardlock_backend::liveness::{Liveness, SessionHealth};

/// One *ZooKeeper session* (a client and its server-side session id), shared by
/// every guest's lock session ([`super::session::ZkLockSession`]) of this
/// host. A new one (the next `generation`) replaces it after expiry.
pub(super) struct ZkSession {
    pub client: Client,
    pub generation: u64,
    state: StateWatcher,
    pub liveness: Arc<Liveness>,
}

impl ZkSession {
    /// The session's current state.
    pub(crate) fn state(&self) -> SessionState {
        self.state.peek_state()
    }

    /// What may be claimed about the session's grants now (see [`Liveness`]).
    pub(crate) fn health(&self) -> SessionHealth {
        let state = self.state();
        if state.is_terminated() {
            self.liveness.end();
            return SessionHealth::Ended;
        }
        let connected = matches!(
            state,
            SessionState::SyncConnected | SessionState::ConnectedReadOnly
        );
        self.liveness.health(connected, Instant::now())
    }

    /// True once the session expired, was closed, failed authentication, or went
    /// unheard for its whole timeout (ended locally).
    pub(crate) fn is_terminated(&self) -> bool {
        self.state().is_terminated() || self.health() == SessionHealth::Ended
    }

    /// Sends a request and records when it was answered: a heartbeat.
    pub(crate) fn heartbeat(&self) -> impl Future<Output = ()> + Send + 'static {
        let sent = Instant::now();
        let request = self.client.check_stat("/");
        let liveness = self.liveness.clone();
        async move {
            if request.await.is_ok() {
                liveness.heard(sent);
            }
        }
    }

    /// Makes sure later reads on this session see every write the session made
    /// (after a reconnect the server may be a follower that lags behind).
    ///
    /// # Errors
    /// The request's error.
    pub(crate) async fn sync(&self, path: &str) -> Result<(), ZkError> {
        self.client.sync(path).await
    }

    /// Resolves once the session is over: expired, closed or failed
    /// authentication, or ended locally (unheard for its whole timeout).
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    pub(crate) async fn until_over(&self) {
        let mut watcher = self.state.clone();
        while !(watcher.state().is_terminated() || self.liveness.is_ended()) {
            tokio::select! {
                _ = watcher.changed() => {}
                () = self.liveness.until_ended() => {}
            }
        }
    }

    /// Waits until the session is connected again after a connection loss.
    ///
    /// # Errors
    /// [`BackendError::Lost`] when the session ended instead.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    pub(crate) async fn connected(&self) -> Result<(), BackendError> {
        let mut watcher = self.state.clone();
        loop {
            if self.liveness.is_ended() {
                return Err(BackendError::Lost);
            }
            match watcher.state() {
                SessionState::SyncConnected | SessionState::ConnectedReadOnly => return Ok(()),
                state if state.is_terminated() => return Err(BackendError::Lost),
                _ => {
                    tokio::select! {
                        _ = watcher.changed() => {}
                        () = self.liveness.until_ended() => {}
                    }
                }
            }
        }
    }
}

/// Why the lock service is judged unreachable, and since when.
#[derive(Debug, Clone)]
pub(super) struct Unreachable {
    pub since: Instant,
    pub why: String,
}

/// Connects sessions on demand and replaces expired ones.
pub(super) struct Connection {
    config: ZooKeeperConfig,
    generation: AtomicU64,
    /// Serialises connecting, so concurrent callers share one new session.
    connecting: tokio::sync::Mutex<()>,
    current: RwLock<Option<Arc<ZkSession>>>,
    /// Set when a connect attempt failed with no session left (see
    /// `reconnect`), cleared by the next session: while set, requests fail
    /// at once instead of waiting out their timeout.
    unreachable: RwLock<Option<Unreachable>>,
    /// True while a background reconnect loop runs.
    pub(super) reconnecting: AtomicBool,
    /// Set at shutdown: no session is connected any more.
    closed: AtomicBool,
    /// Set by the first request for a session: a pool's session opened on
    /// demand counts towards the backend's health from then on.
    asked: AtomicBool,
    /// Sessions replaced while the server may still keep them (and their
    /// nodes): closed before the next session is handed out.
    left_behind: left_behind::LeftBehind,
}

impl Connection {
    pub(crate) fn new(config: ZooKeeperConfig) -> Self {
        Connection {
            config,
            generation: AtomicU64::new(0),
            connecting: tokio::sync::Mutex::new(()),
            current: RwLock::new(None),
            unreachable: RwLock::new(None),
            reconnecting: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            asked: AtomicBool::new(false),
            left_behind: left_behind::LeftBehind::default(),
        }
    }

    /// Whether anyone asked for a session yet.
    pub(crate) fn asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    /// Why and since when the service is judged unreachable, if it is.
    pub(crate) fn unreachable(&self) -> Option<Unreachable> {
        self.unreachable
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_unreachable(&self, why: Option<String>) {
        let mut unreachable = self.unreachable.write().unwrap_or_else(|e| e.into_inner());
        match why {
            None => *unreachable = None,
            Some(why) => {
                let since = unreachable.as_ref().map_or_else(Instant::now, |u| u.since);
                *unreachable = Some(Unreachable { since, why });
            }
        }
    }

    /// True once the backend was shut down.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn config(&self) -> &ZooKeeperConfig {
        &self.config
    }

    /// The live session, if any (no I/O).
    pub(crate) fn latest(&self) -> Option<Arc<ZkSession>> {
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        current.as_ref().filter(|s| !s.is_terminated()).cloned()
    }

    /// The live session of `generation`, if it is still the current one.
    pub(crate) fn session_of(&self, generation: u64) -> Option<Arc<ZkSession>> {
        self.latest().filter(|s| s.generation == generation)
    }

    /// Forgets session `generation` once it ended locally, so the next call connects
    /// a new one; the old client closes when its last user drops it (deleting its
    /// nodes if the server still knows the session).
    pub(crate) fn forget(&self, generation: u64) {
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|s| s.generation == generation)
            && let Some(forgotten) = current.take()
        {
            self.left_behind.keep(&forgotten);
        }
    }

    /// Takes the current session out for good, at shutdown (the caller drops it
    /// to close it); later calls connect a new one.
    pub(crate) fn close(&self) -> Option<Arc<ZkSession>> {
        self.closed.store(true, Ordering::Release);
        self.current
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The current session, connecting a new one when there is none or it
    /// ended — unless the service is judged unreachable (a background
    /// reconnect runs): then it fails at once.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] naming the hosts when no session could be
    /// established within the session timeout, or at once while the service is
    /// judged unreachable; after shutdown.
    ///
    /// # Cancellation safety
    /// Cancel safe: a connection attempt that is dropped leaves no session behind.
    /// The flag is true when the session was connected by this call.
    pub(crate) async fn session(&self) -> Result<(Arc<ZkSession>, bool), BackendError> {
        if let Some(session) = self.latest() {
            return Ok((session, false));
        }
        self.connect_once(false).await
    }

    /// The error of a request made while the service is judged unreachable.
    fn down_error(&self, down: &Unreachable) -> BackendError {
        BackendError::Unavailable(format!(
            "{} (unreachable for {:.1}s; reconnecting in the background)",
            down.why,
            down.since.elapsed().as_secs_f64(),
        ))
    }

    /// The current session, connecting a new one when there is none (whether
    /// or not the service is judged unreachable: the reconnect loop's attempt).
    /// Records the outcome: a failure marks the service unreachable, a
    /// session clears the mark.
    ///
    /// # Errors
    /// As [`Self::session`].
    ///
    /// # Cancellation safety
    /// As [`Self::session`].
    pub(crate) async fn establish(&self) -> Result<(Arc<ZkSession>, bool), BackendError> {
        self.connect_once(true).await
    }

    /// One connect attempt at a time; callers that waited for another's
    /// attempt take its session, or (unless `even_if_down`) its failure.
    async fn connect_once(
        &self,
        even_if_down: bool,
    ) -> Result<(Arc<ZkSession>, bool), BackendError> {
        self.asked.store(true, Ordering::Relaxed);
        if !even_if_down && let Some(down) = self.unreachable() {
            return Err(self.down_error(&down));
        }
        let _connecting = self.connecting.lock().await;
        if let Some(session) = self.latest() {
            return Ok((session, false));
        }
        if !even_if_down && let Some(down) = self.unreachable() {
            return Err(self.down_error(&down));
        }
        if self.is_closed() {
            return Err(BackendError::Unavailable(
                "the ZooKeeper backend was shut down".into(),
            ));
        }
        let session = match self.connect().await {
            Ok(session) => Arc::new(session),
            Err(error) => {
                let why = match &error {
                    BackendError::Unavailable(why) => why.clone(),
                    other => other.to_string(),
                };
                self.set_unreachable(Some(why));
                return Err(error);
            }
        };
        self.set_unreachable(None);
        tracing::info!(
            hosts = %self.config.hosts,
            session = session.client.session_id().0,
            generation = session.generation,
            "connected to ZooKeeper"
        );
        let replaced = self
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(replaced) = replaced {
            self.left_behind.keep(&replaced);
        }
        // The server answers again: what a session given up left on it goes
        // before this host says it is connected (see `left_behind`).
        self.left_behind.close_all(&self.config).await;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(session.clone());
        Ok((session, true))
    }

    async fn connect(&self) -> Result<ZkSession, BackendError> {
        // Nothing listening anywhere is reported at once, not after the whole
        // session timeout (the client itself retries refused hosts until then).
        if refused_everywhere(&self.config.hosts).await {
            return Err(BackendError::Unavailable(format!(
                "cannot connect to ZooKeeper at {}: connection refused by every host",
                self.config.hosts
            )));
        }
        let sent = Instant::now();
        let client = connector::connect(&self.config).await?;
        let state = client.state_watcher();
        let liveness = Arc::new(Liveness::new(client.session_timeout(), sent));
        Ok(ZkSession {
            client,
            generation: self.generation.fetch_add(1, Ordering::Relaxed) + 1,
            state,
            liveness,
        })
    }
}

/// True when every host of `hosts` (`HOST:PORT[,...][/chroot]`) refuses a TCP
/// connection right now.
async fn refused_everywhere(hosts: &str) -> bool {
    let hosts = hosts.split('/').next().unwrap_or_default();
    let mut any = false;
    for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        any = true;
        let host = (host.strip_prefix("tcp://"))
            .or_else(|| host.strip_prefix("tcp+tls://"))
            .unwrap_or(host);
        let attempt = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            tokio::net::TcpStream::connect(host),
        )
        .await;
        match attempt {
            Ok(Err(error)) if error.kind() == std::io::ErrorKind::ConnectionRefused => {}
            _ => return false,
        }
    }
    any
}
