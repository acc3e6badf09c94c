//! Valkey/Redis Sentinel: which server is the primary, as a majority of the
//! Sentinels name it.
//!
//! A majority, not the first Sentinel that answers: a Sentinel cut off with
//! an old primary keeps naming it, and a host that believed it would keep
//! renewing its session there while the other side's new primary grants
//! the same locks. So a host connects only to the primary a majority names,
//! and each heartbeat counts (moves the host's session clock) only when a
//! majority still names the server it renewed on; when a majority names
//! another, the session is over (a failover). Without a majority the
//! renewal does not count, and the host's clock ends the session in time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::future::join_all;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client};
use wardlock_backend::BackendError;

/// The Sentinels of one monitored primary.
pub(crate) struct Sentinels {
    /// `HOST:PORT` of each Sentinel.
    addresses: Vec<String>,
    /// The name the Sentinels monitor the primary under.
    master: String,
    /// How long one question to one Sentinel may take.
    bound: Duration,
    /// An open connection to each Sentinel that answered last time: every
    /// heartbeat asks them all, so connections are kept, not made anew.
    connections: Mutex<HashMap<String, MultiplexedConnection>>,
}

/// What the Sentinels said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A majority names this primary (`HOST`, `PORT`).
    Primary(String, u16),
    /// No majority names one primary: what each said, for the error.
    Undecided(String),
}

impl Sentinels {
    pub(crate) fn new(addresses: Vec<String>, master: String, bound: Duration) -> Self {
        Sentinels {
            addresses,
            master,
            bound,
            connections: Mutex::new(HashMap::new()),
        }
    }

    /// Asks every Sentinel at once which server is the primary.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only opens connections of its own and asks.
    pub(crate) async fn primary(&self) -> Verdict {
        let answers = join_all(self.addresses.iter().map(|a| self.ask(a))).await;
        let mut votes: HashMap<(String, u16), usize> = HashMap::new();
        let mut said = Vec::new();
        for (address, answer) in self.addresses.iter().zip(answers) {
            match answer {
                Ok(Some(primary)) => {
                    said.push(format!("{address}: {}:{}", primary.0, primary.1));
                    *votes.entry(primary).or_default() += 1;
                }
                Ok(None) => said.push(format!(
                    "{address}: does not monitor a primary named {:?}",
                    self.master
                )),
                Err(why) => said.push(format!("{address}: {why}")),
            }
        }
        let majority = self.addresses.len() / 2 + 1;
        match votes.into_iter().find(|(_, n)| *n >= majority) {
            Some(((host, port), _)) => Verdict::Primary(host, port),
            None => Verdict::Undecided(format!(
                "no majority ({majority} of {}) of the Sentinels names one primary for {:?} ({})",
                self.addresses.len(),
                self.master,
                said.join("; ")
            )),
        }
    }

    /// The primary a majority names.
    ///
    /// # Errors
    /// `Unavailable` naming what each Sentinel said, without a majority.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`Sentinels::primary`].
    pub(crate) async fn require_primary(&self) -> Result<(String, u16), BackendError> {
        match self.primary().await {
            Verdict::Primary(host, port) => Ok((host, port)),
            Verdict::Undecided(why) => {
                Err(BackendError::Unavailable(format!("Valkey/Redis: {why}")))
            }
        }
    }

    fn connections(&self) -> std::sync::MutexGuard<'_, HashMap<String, MultiplexedConnection>> {
        self.connections.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One Sentinel's answer to `SENTINEL GET-MASTER-ADDR-BY-NAME`, on its
    /// kept connection or a new one (forgotten when it fails).
    async fn ask(&self, address: &str) -> Result<Option<(String, u16)>, String> {
        let kept = self.connections().get(address).cloned();
        let mut conn = match kept {
            Some(conn) => conn,
            None => {
                let client =
                    Client::open(format!("redis://{address}")).map_err(|e| e.to_string())?;
                let settings = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(self.bound))
                    .set_response_timeout(Some(self.bound));
                let conn = client
                    .get_multiplexed_async_connection_with_config(&settings)
                    .await
                    .map_err(|e| format!("unreachable ({e})"))?;
                self.connections().insert(address.to_owned(), conn.clone());
                conn
            }
        };
        let answer: Option<(String, String)> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(&self.master)
            .query_async(&mut conn)
            .await
            .map_err(|e| {
                self.connections().remove(address);
                format!("no answer ({e})")
            })?;
        match answer {
            None => Ok(None),
            Some((host, port)) => port
                .parse()
                .map(|port| Some((host, port)))
                .map_err(|_| format!("answered a port that is not a number: {port:?}")),
        }
    }
}

/// `url` with its host and port replaced by `host`:`port` (user, database
/// and scheme kept).
pub(crate) fn at_address(url: &str, host: &str, port: u16) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let user = authority
        .rsplit_once('@')
        .map_or(String::new(), |(user, _)| format!("{user}@"));
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    format!("{scheme}://{user}{host}:{port}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_replaced_and_the_rest_kept() {
        assert_eq!(
            at_address("redis://locker@mymaster/2", "10.0.0.5", 6380),
            "redis://locker@10.0.0.5:6380/2"
        );
        assert_eq!(
            at_address("rediss://primary:1", "::1", 7000),
            "rediss://[::1]:7000"
        );
    }
}
