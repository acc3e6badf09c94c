//! Sessions this host gave up on while the server may still keep them.
//!
//! A session unheard for its whole timeout ends here (its grants read
//! `lost`) and a new one replaces it. But a ZooKeeper server that restarts
//! from its data restores the old session and its ephemeral nodes (this
//! host's held, queued and cached lock nodes) and expires it only a session
//! timeout after it is back: until then those nodes keep this host's next
//! request for the same lock waiting behind its own past (a 504 after a
//! restart, issue 54). So once a new session is up, each session given up
//! is attached again by its id and password and closed at once: the server
//! deletes its nodes with it. One the server already expired refuses the
//! attach, and has nothing left. Curator's guaranteed delete, for a whole
//! session at once, and before the new session is handed out: a host that
//! says it is connected has nothing of its own in its way.

use std::sync::Mutex;

use zookeeper_client::SessionInfo;

use super::ZkSession;
use super::connector;
use crate::config::ZooKeeperConfig;

/// The sessions given up and not yet closed.
#[derive(Default)]
pub(super) struct LeftBehind(Mutex<Vec<SessionInfo>>);

impl LeftBehind {
    /// Keeps `session`, replaced or forgotten, to close once the server
    /// answers: unless it was closed by this host, which the server heard.
    pub(super) fn keep(&self, session: &ZkSession) {
        if session.state() == zookeeper_client::SessionState::Closed {
            return;
        }
        self.sessions().push(session.client.session().clone());
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, Vec<SessionInfo>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes every session kept (each attempt bounded by the session
    /// timeout); one that cannot be attached is expired on the server, or
    /// will be, and is not tried again.
    ///
    /// # Cancellation safety
    /// Cancel safe: a session not closed yet is expired by the server later.
    pub(super) async fn close_all(&self, config: &ZooKeeperConfig) {
        let sessions = std::mem::take(&mut *self.sessions());
        for session in sessions {
            let id = session.id().0;
            match connector::reattach(config, session).await {
                Ok(client) => {
                    // Dropping the only handle of a connected client sends
                    // the close; the session is over (its nodes deleted)
                    // once the server answered it.
                    let mut state = client.state_watcher();
                    drop(client);
                    let closed = async {
                        while !state.state().is_terminated() {
                            state.changed().await;
                        }
                    };
                    if tokio::time::timeout(config.session_timeout, closed)
                        .await
                        .is_err()
                    {
                        tracing::warn!(
                            session = id,
                            "closing a session given up took longer than its timeout"
                        );
                        continue;
                    }
                    tracing::info!(
                        session = id,
                        "closed a session this host had given up, which the server still kept (with its lock nodes)"
                    );
                }
                Err(why) => {
                    tracing::debug!(session = id, %why, "a session given up is gone from the server")
                }
            }
        }
    }
}
