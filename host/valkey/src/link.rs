//! The host's connection to the server: one multiplexed connection for every
//! command of every session, opened on demand, judged at every connect
//! (`safety`), and replaced after a failure. A new connection that finds
//! another server process than the host's sessions were opened on (a
//! restart, a failover) ends those sessions (see `session`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{
    AsyncConnectionConfig, Client, ErrorKind, FromRedisValue, RedisError, ScriptInvocation, Value,
};
use wardlock_backend::BackendError;

use crate::config::ValkeyConfig;
use crate::layout::Layout;
use crate::safety::{self, Answers, ServerFacts};
use crate::scripts;
use crate::sentinel::{Sentinels, Verdict, at_address};

/// How far tokens jump when a root moves to another server process: past
/// whatever grants the old one made that the new one never heard of.
pub const TOKEN_JUMP: u64 = 1 << 32;

/// One open connection and what was learned of its server.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) conn: MultiplexedConnection,
    pub(crate) facts: Arc<ServerFacts>,
    /// Counts connections, so a failure drops only the one it happened on.
    serial: u64,
    /// With Sentinel, the primary's `HOST`, `PORT` as the Sentinels named it.
    pub(crate) primary: Option<(String, u16)>,
}

/// Whether a connection still reaches the primary ([`Server::confirm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Confirmation {
    /// It does (or there is no Sentinel to ask).
    Primary,
    /// A majority of the Sentinels names another server: a failover.
    Replaced,
    /// No majority answers either way.
    Unknown,
}

/// The server, as the backend reaches it.
pub(crate) struct Server {
    /// For explaining a failed connect (`tls::explain`) and building the
    /// client of the primary the Sentinels name.
    config: ValkeyConfig,
    client: Mutex<Client>,
    sentinels: Option<Sentinels>,
    layout: Layout,
    current: tokio::sync::Mutex<Option<Link>>,
    serial: Mutex<u64>,
    /// The facts of the last connection, for health and logs.
    last_facts: Mutex<Option<Arc<ServerFacts>>>,
    /// The highest token this host was given: what a server that lost the
    /// root's counter (a promoted replica behind its primary) is moved past.
    highest_token: AtomicU64,
}

impl Server {
    /// # Errors
    /// `InvalidConfig` for a URL the client cannot read.
    pub(crate) fn new(config: &ValkeyConfig) -> Result<Self, BackendError> {
        let client = client_for(config, &config.url)?;
        let sentinels = config.sentinel.as_ref().map(|(addresses, master)| {
            Sentinels::new(
                addresses.clone(),
                master.clone(),
                connect_bound(config.session_timeout),
            )
        });
        Ok(Server {
            config: config.clone(),
            client: Mutex::new(client),
            sentinels,
            layout: Layout::new(&config.root),
            current: tokio::sync::Mutex::new(None),
            serial: Mutex::new(0),
            last_facts: Mutex::new(None),
            highest_token: AtomicU64::new(0),
        })
    }

    /// The client of the server connected to last (with Sentinel: the
    /// primary a majority named at the last connect).
    pub(crate) fn client(&self) -> Client {
        self.client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether `link` still reaches the primary: always without Sentinel;
    /// with it, what a majority of the Sentinels names now. A link to a
    /// replaced primary is forgotten (the next [`Server::link`] connects to
    /// the one they name).
    ///
    /// # Cancellation safety
    /// Cancel safe: it only asks the Sentinels.
    pub(crate) async fn confirm(&self, link: &Link) -> Confirmation {
        let (Some(sentinels), Some(address)) = (&self.sentinels, &link.primary) else {
            return Confirmation::Primary;
        };
        match sentinels.primary().await {
            Verdict::Primary(host, port)
                if (host.as_str(), port) == (address.0.as_str(), address.1) =>
            {
                Confirmation::Primary
            }
            Verdict::Primary(..) => {
                self.failed(link).await;
                Confirmation::Replaced
            }
            Verdict::Undecided(_) => Confirmation::Unknown,
        }
    }

    /// Notes a token the server gave this host.
    pub(crate) fn saw_token(&self, token: u64) {
        self.highest_token.fetch_max(token, Ordering::SeqCst);
    }

    /// The facts of the last server connected to, if any.
    pub(crate) fn facts(&self) -> Option<Arc<ServerFacts>> {
        self.last_facts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The open connection, or a new one (judged, and the root's server
    /// noted: `scripts::IDENTIFY`).
    ///
    /// # Errors
    /// `Unavailable` when the server cannot be reached; `Refused` when it
    /// refuses this host or cannot keep locks safe.
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped connect opens nothing that stays.
    pub(crate) async fn link(&self) -> Result<Link, BackendError> {
        let mut current = self.current.lock().await;
        if let Some(link) = current.as_ref() {
            return Ok(link.clone());
        }
        let link = self.connect().await?;
        *current = Some(link.clone());
        Ok(link)
    }

    /// Runs a script `invocation` on `link`; a failure forgets the link
    /// (the next [`Server::link`] connects anew) and is classified, `what`
    /// naming the request.
    ///
    /// # Errors
    /// As [`classify`].
    ///
    /// # Cancellation safety
    /// A dropped call may still run on the server once, if it left.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        link: &Link,
        invocation: &ScriptInvocation<'_>,
        what: &str,
    ) -> Result<T, BackendError> {
        let mut conn = link.conn.clone();
        match invocation.invoke_async(&mut conn).await {
            Ok(answer) => Ok(answer),
            Err(error) => {
                self.failed(link).await;
                Err(classify(&error, what))
            }
        }
    }

    /// Runs `command` on `link`, as [`Server::invoke`] a script.
    ///
    /// # Errors
    /// As [`classify`].
    ///
    /// # Cancellation safety
    /// As [`Server::invoke`].
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        link: &Link,
        command: &redis::Cmd,
        what: &str,
    ) -> Result<T, BackendError> {
        let mut conn = link.conn.clone();
        match command.query_async(&mut conn).await {
            Ok(answer) => Ok(answer),
            Err(error) => {
                self.failed(link).await;
                Err(classify(&error, what))
            }
        }
    }

    /// Forgets `link` after a failure on it (the next `link` connects anew).
    pub(crate) async fn failed(&self, link: &Link) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|l| l.serial == link.serial) {
            *current = None;
        }
    }

    async fn connect(&self) -> Result<Link, BackendError> {
        let bound = connect_bound(self.config.session_timeout);
        let primary = match &self.sentinels {
            None => None,
            Some(sentinels) => {
                let (host, port) = sentinels.require_primary().await?;
                let url = at_address(&self.config.url, &host, port);
                *self.client.lock().unwrap_or_else(|e| e.into_inner()) =
                    client_for(&self.config, &url)?;
                Some((host, port))
            }
        };
        let client = self.client();
        // A reply is waited for up to two session timeouts: what a host
        // claims rests on the session clock (the heartbeat bounds its own
        // renewals), not on this bound, which only ends a request on a dead
        // connection. At a fifth of the session timeout, a write in flight
        // when the host was paused (SIGSTOP) failed at resume with its reply
        // already on the socket.
        let settings = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(bound))
            .set_response_timeout(Some(self.config.session_timeout * 2));
        let mut conn = match client
            .get_multiplexed_async_connection_with_config(&settings)
            .await
        {
            Ok(conn) => conn,
            Err(e) => {
                let error = classify(&e, "connect");
                return Err(crate::tls::explain(&self.config, &client, error).await);
            }
        };
        let info: String = redis::cmd("INFO")
            .arg("everything")
            .query_async(&mut conn)
            .await
            .map_err(|e| classify(&e, "read INFO"))?;
        let config = read_config(&mut conn).await;
        let root = self.layout.root();
        let cluster = if safety::cluster_enabled(&info) && safety::hash_tag(root).is_some() {
            Some(root_slot(&mut conn, root).await?)
        } else {
            None
        };
        let facts = safety::judge(
            &Answers {
                info: &info,
                config: config.as_ref(),
                root,
                cluster,
            },
            self.config.accept_unsafe,
        )
        .map_err(BackendError::Refused)?;
        for warning in &facts.unsafe_settings {
            tracing::warn!(server = %facts.product, "accepted an unsafe server setting: {warning}");
        }
        let moved: i64 = scripts::IDENTIFY
            .key(self.layout.server_key())
            .key(self.layout.settle_key())
            .key(self.layout.token_key())
            .key(self.layout.revision_key())
            .key(self.layout.kv_version_key())
            .arg(self.layout.root())
            .arg(&facts.run_id)
            .arg(millis(self.config.session_timeout))
            .arg(TOKEN_JUMP)
            .arg(if self.sentinels.is_some() { "1" } else { "0" })
            .arg(
                self.facts()
                    .map_or_else(String::new, |facts| facts.run_id.clone()),
            )
            .arg(self.highest_token.load(Ordering::SeqCst))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| classify(&e, "note the server"))?;
        if moved == 1 {
            tracing::warn!(
                run_id = %facts.run_id,
                "the root {} is served by another server process than before (a restart or a failover): no lock is granted for a session timeout, and tokens jump by 2^32",
                self.layout.root()
            );
        }
        let facts = Arc::new(facts);
        *self.last_facts.lock().unwrap_or_else(|e| e.into_inner()) = Some(facts.clone());
        let serial = {
            let mut serial = self.serial.lock().unwrap_or_else(|e| e.into_inner());
            *serial += 1;
            *serial
        };
        Ok(Link {
            conn,
            facts,
            serial,
            primary,
        })
    }
}

/// How long a connect (or a question to a Sentinel) may take: a fifth of
/// the session timeout, at least 100 ms.
fn connect_bound(session_timeout: Duration) -> Duration {
    (session_timeout / 5).max(Duration::from_millis(100))
}

/// A client for `url` with `config`'s password and TLS files.
///
/// # Errors
/// `InvalidConfig` for a URL the client cannot read, or TLS files that
/// cannot be used.
fn client_for(config: &ValkeyConfig, url: &str) -> Result<Client, BackendError> {
    let mut info = redis::IntoConnectionInfo::into_connection_info(url)
        .map_err(|e| BackendError::InvalidConfig(format!("--redis {}: {e}", config.url)))?;
    if let Some(password) = &config.password {
        let settings = info
            .redis_settings()
            .clone()
            .set_password(password.expose());
        info = info.set_redis_settings(settings);
    }
    crate::tls::client(info, config)
}

/// `appendonly` and `save`, or `None` where `CONFIG` is refused.
async fn read_config(conn: &mut MultiplexedConnection) -> Option<HashMap<String, String>> {
    let mut config = HashMap::new();
    for key in ["appendonly", "save"] {
        let pair: HashMap<String, String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(key)
            .query_async(conn)
            .await
            .ok()?;
        config.extend(pair);
    }
    Some(config)
}

/// A duration in whole milliseconds, for `PX` and `PEXPIRE`.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The backend error for a request (`what`) that failed with `error`: a
/// refusal of this host (authentication, rights) is `Refused`, anything
/// else `Unavailable`.
pub(crate) fn classify(error: &RedisError, what: &str) -> BackendError {
    match error.kind() {
        ErrorKind::AuthenticationFailed => BackendError::Refused(format!(
            "the server refused this host's login, to {what}: {error} (check the URL's user and --redis-password-file)"
        )),
        ErrorKind::Server(redis::ServerErrorKind::NoPerm) => BackendError::Refused(format!(
            "the server refused this host's user, to {what}: {error} (the user needs +@all on the root's keys, or at least EVALSHA, EVAL, INFO, PUBLISH, SUBSCRIBE)"
        )),
        _ => BackendError::Unavailable(format!("Valkey/Redis could not {what}: {error}")),
    }
}

/// A script's answer element as text (a bulk or simple string, a number).
pub(crate) fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A script's answer element as a non-negative number.
pub(crate) fn integer(value: &Value) -> Option<u64> {
    match value {
        Value::Int(n) => u64::try_from(*n).ok(),
        other => text(other).parse().ok(),
    }
}

/// Which hash slot the root's keys map to on a cluster-mode server, and
/// whether the node `conn` is on serves it.
///
/// # Errors
/// `Unavailable` when the server does not answer.
///
/// # Cancellation safety
/// Cancel safe: reads.
async fn root_slot(
    conn: &mut MultiplexedConnection,
    root: &str,
) -> Result<safety::RootSlot, BackendError> {
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(root)
        .query_async(conn)
        .await
        .map_err(|e| classify(&e, "read CLUSTER KEYSLOT"))?;
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(conn)
        .await
        .map_err(|e| classify(&e, "read CLUSTER NODES"))?;
    Ok(safety::RootSlot {
        slot,
        served_here: safety::serves(&nodes, slot),
    })
}
