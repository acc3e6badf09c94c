//! The ZooKeeper session shared by every guest of a host, and its replacement
//! after expiry.
//!
//! Guests share one ZooKeeper session (servers cap connections per client
//! address); the host tracks which nodes belong to which guest. A session is
//! identified by a *generation*: when it expires, every grant of that generation is
//! lost and the next call connects a new session with a new generation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use zookeeper_client::{Client, SessionState, StateWatcher};

use super::config::ZooKeeperConfig;
use crate::backend::BackendError;

/// One ZooKeeper session.
pub(super) struct ZkSession {
    pub client: Client,
    pub generation: u64,
    state: StateWatcher,
}

impl ZkSession {
    /// The session's current state.
    pub fn state(&self) -> SessionState {
        self.state.peek_state()
    }

    /// True once the session expired, was closed or failed authentication.
    pub fn is_terminated(&self) -> bool {
        self.state().is_terminated()
    }

    /// Waits until the session is connected again after a connection loss.
    ///
    /// # Errors
    /// [`BackendError::Lost`] when the session ended instead.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    pub async fn connected(&self) -> Result<(), BackendError> {
        let mut watcher = self.state.clone();
        loop {
            match watcher.state() {
                SessionState::SyncConnected | SessionState::ConnectedReadOnly => return Ok(()),
                state if state.is_terminated() => return Err(BackendError::Lost),
                _ => {
                    watcher.changed().await;
                }
            }
        }
    }
}

/// Connects sessions on demand and replaces expired ones.
pub(super) struct Connection {
    config: ZooKeeperConfig,
    generation: AtomicU64,
    /// Serialises connecting, so concurrent callers share one new session.
    connecting: tokio::sync::Mutex<()>,
    current: RwLock<Option<Arc<ZkSession>>>,
}

impl Connection {
    pub fn new(config: ZooKeeperConfig) -> Self {
        Connection {
            config,
            generation: AtomicU64::new(0),
            connecting: tokio::sync::Mutex::new(()),
            current: RwLock::new(None),
        }
    }

    pub fn config(&self) -> &ZooKeeperConfig {
        &self.config
    }

    /// The live session, if any (no I/O).
    pub fn latest(&self) -> Option<Arc<ZkSession>> {
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        current.as_ref().filter(|s| !s.is_terminated()).cloned()
    }

    /// The live session of `generation`, if it is still the current one.
    pub fn session_of(&self, generation: u64) -> Option<Arc<ZkSession>> {
        self.latest().filter(|s| s.generation == generation)
    }

    /// The current session, connecting a new one when there is none or it ended.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] naming the hosts when no session could be
    /// established within the session timeout.
    ///
    /// # Cancellation safety
    /// Cancel safe: a connection attempt that is dropped leaves no session behind.
    /// The flag is true when the session was connected by this call.
    pub async fn session(&self) -> Result<(Arc<ZkSession>, bool), BackendError> {
        if let Some(session) = self.latest() {
            return Ok((session, false));
        }
        let _connecting = self.connecting.lock().await;
        if let Some(session) = self.latest() {
            return Ok((session, false));
        }
        let session = Arc::new(self.connect().await?);
        tracing::info!(
            hosts = %self.config.hosts,
            session = session.client.session_id().0,
            generation = session.generation,
            "connected to ZooKeeper"
        );
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(session.clone());
        Ok((session, true))
    }

    async fn connect(&self) -> Result<ZkSession, BackendError> {
        let mut connector = Client::connector()
            .with_session_timeout(self.config.session_timeout)
            .with_connection_timeout(
                self.config
                    .session_timeout
                    .min(std::time::Duration::from_secs(5)),
            );
        if let Some(credentials) = &self.config.digest_auth {
            connector = connector.with_auth("digest", credentials.as_bytes());
        }
        let unavailable = |why: String| {
            BackendError::Unavailable(format!(
                "cannot connect to ZooKeeper at {}: {why}",
                self.config.hosts
            ))
        };
        let client = tokio::time::timeout(
            self.config.session_timeout,
            connector.connect(&self.config.hosts),
        )
        .await
        .map_err(|_| {
            unavailable(format!(
                "no session within {:?}",
                self.config.session_timeout
            ))
        })?
        .map_err(|e| unavailable(e.to_string()))?;
        let state = client.state_watcher();
        Ok(ZkSession {
            client,
            generation: self.generation.fetch_add(1, Ordering::Relaxed) + 1,
            state,
        })
    }
}
