//! One server connection: the session its advisory locks live in, its
//! session clock, and the statements the recipe runs on it.
//!
//! A connection is a lock session in PostgreSQL's sense: every advisory lock
//! taken on it is held until unlocked on it or until it ends. So each
//! connection has a generation of its own (a grant's status is its
//! connection's) and its own [`Liveness`]: a heartbeat (`SELECT 1`) every
//! tenth of the session timeout; "last heard" is the send time of the last
//! answered one. The server ends a connection idle for the session timeout
//! and a fifth more (`idle_session_timeout`, set on it: see
//! [`server_idle_timeout`]), so it cannot free this host's locks before
//! `last heard + timeout`, the moment the host itself reports them lost; a
//! connection the server closes (`pg_terminate_backend`, a restart) ends the
//! clock at once.
//!
//! A connection blocked in `pg_advisory_lock` answers nothing until granted:
//! while a wait is in flight ([`PgConn::start_wait`]) its heartbeat pauses, and the recipe
//! checks the connection again after a long wait before handing its lock
//! out (see `recipe`).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;
use tokio_postgres::{Client, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use wardlock_backend::BackendError;
use wardlock_backend::handoff::{NodeSession, SessionHealth, WatchFuture};
use wardlock_backend::liveness::Liveness;

use crate::errors::classify;
use crate::schema::Schema;

/// How to open a connection: the client configuration, TLS, and the
/// session settings every connection gets.
pub(crate) struct Connector {
    pub(crate) client: tokio_postgres::Config,
    pub(crate) tls: MakeRustlsConnect,
    pub(crate) session_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) schema: Schema,
    /// Whether the URL names an application; if not, connections call
    /// themselves `wardlock` (in `pg_stat_activity`).
    pub(crate) named: bool,
}

impl Connector {
    /// Opens a plain client connection (bounded by the connect timeout); its
    /// driver runs on the current runtime and ends `on_close` when the
    /// connection ends.
    ///
    /// # Errors
    /// `Refused` for a login the server rejects, `Unavailable` for a server
    /// that cannot be reached in time.
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped connect closes what it opened.
    pub(crate) async fn connect_raw(
        &self,
        on_close: Option<Arc<Liveness>>,
    ) -> Result<Client, BackendError> {
        let mut config = self.client.clone();
        config.connect_timeout(self.connect_timeout);
        // Keep-alives let the kernel notice a vanished server; the session
        // clock is what decides.
        config.keepalives(true);
        config.keepalives_idle(self.session_timeout / 2);
        if !self.named {
            config.application_name("wardlock");
        }
        let connecting = config.connect(self.tls.clone());
        let (client, connection) = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| {
                BackendError::Unavailable(format!(
                    "PostgreSQL at {} did not answer within {:?}",
                    describe(&self.client),
                    self.connect_timeout
                ))
            })?
            .map_err(|e| classify(&e, &format!("connect to {}", describe(&self.client))))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a PostgreSQL connection ended");
            }
            // In the driver itself, the moment the connection ends: a
            // terminated backend's FATAL reaches this host before the server
            // frees its locks, and its holders learn it without a hop more.
            if let Some(liveness) = on_close {
                liveness.end();
            }
        });
        Ok(client)
    }
}

/// The prepared statements of the lock recipe on one connection.
pub(crate) struct Statements {
    /// `(ok, token)`: takes the lock exclusively if no one holds or waits.
    pub(crate) try_exclusive: Statement,
    /// `(ok, token)`: takes it shared if no writer holds or waits.
    pub(crate) try_shared: Statement,
    /// `(token, pids ahead)`: waits in the queue (bounded by `lock_timeout`
    /// = `$2`; `$3`, `$4`: the key as `pg_locks` shows it).
    pub(crate) lock_exclusive: Statement,
    /// `token`: waits for a shared grant.
    pub(crate) lock_shared: Statement,
    pub(crate) unlock_exclusive: Statement,
    pub(crate) unlock_shared: Statement,
    /// `SELECT 1`, the heartbeat.
    pub(crate) ping: Statement,
    /// `(settled, present)` of the server processes `$1`: how many still
    /// run, and how many of those are settled, that is blocked reading
    /// from their client (`ClientRead`) or waiting for a lock — states a
    /// process that is ending never enters again (see `recipe::confirm`).
    pub(crate) alive: Statement,
    /// Whether a request waits for the key (`classid` `$1`, `objid` `$2`)
    /// in a mode that conflicts with a holder (any mode when `$3`).
    pub(crate) waiters: Statement,
}

/// One connection (see the module doc).
pub(crate) struct PgConn {
    pub(crate) generation: u64,
    pub(crate) client: Client,
    pub(crate) statements: Statements,
    pub(crate) liveness: Arc<Liveness>,
    /// The server process serving it (`pg_backend_pid()`).
    pub(crate) pid: i32,
    tls: MakeRustlsConnect,
    /// Whether a `pg_advisory_lock` is in flight (no heartbeat can be
    /// answered), and whether a cancel request was sent for it (see
    /// [`PgConn::cancel_wait`]).
    wait: AtomicU8,
}

/// No wait in flight on the connection.
const NOT_WAITING: u8 = 0;
/// A wait is in flight.
const WAITING: u8 = 1;
/// A cancel request was sent for the wait in flight: the connection is not
/// used again (see [`PgConn::cancel_wait`]).
const CANCELLED: u8 = 2;

impl PgConn {
    /// Opens connection `generation`: connects (bounded by the connect
    /// timeout), sets the session timeout, bumps the token epoch after a
    /// server restart (see `schema`) when `epoch`, and prepares the
    /// statements. Its heartbeat runs on the current runtime.
    ///
    /// # Errors
    /// `Refused` for a login or rights the server rejects, `Unavailable`
    /// for a server that cannot be reached in time.
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped open closes what it opened.
    pub(crate) async fn open(
        connector: &Connector,
        generation: u64,
        epoch: bool,
    ) -> Result<Arc<PgConn>, BackendError> {
        let sent = Instant::now();
        let liveness = Arc::new(Liveness::new(connector.session_timeout, sent));
        let client = connector.connect_raw(Some(liveness.clone())).await?;
        // Each step bounded by the session timeout, named when it runs out:
        // a server that accepts the connection and then stalls must not hold
        // the pool's opening (and every lock request behind it) forever.
        let limit = connector.session_timeout;
        let timeout_ms = server_idle_timeout(connector.session_timeout).as_millis();
        // `synchronous_commit = off`: a statement that draws a token logs the
        // sequence 32 values ahead and would wait for the disk each 32nd
        // time, holding up every grant pipelined behind it; the jump after a
        // server start (see `schema`) covers what a crash could lose. The
        // guarded store's writes turn it back on for themselves (`guarded`).
        let settings =
            format!("SET idle_session_timeout = {timeout_ms}; SET synchronous_commit = off");
        within(
            limit,
            "opening a connection (to set idle_session_timeout)",
            async {
                client
                    .batch_execute(&settings)
                    .await
                    .map_err(|e| classify(&e, "set idle_session_timeout"))
            },
        )
        .await?;
        if epoch {
            let bump = connector.schema.bump_epoch(&client);
            within(
                limit,
                "opening a connection (to move the token sequence past a server start)",
                bump,
            )
            .await?;
        }
        let statements = within(
            limit,
            "opening a connection (to prepare the lock statements)",
            prepare(&client, &connector.schema),
        )
        .await?;
        let pid: i32 = within(
            limit,
            "opening a connection (to read the backend's pid)",
            async {
                client
                    .query_one("SELECT pg_backend_pid()", &[])
                    .await
                    .map_err(|e| classify(&e, "read the backend's pid"))?
                    .try_get(0)
                    .map_err(|e| classify(&e, "read the backend's pid"))
            },
        )
        .await?;
        let conn = Arc::new(PgConn {
            generation,
            client,
            statements,
            liveness,
            pid,
            tls: connector.tls.clone(),
            wait: AtomicU8::new(NOT_WAITING),
        });
        conn.liveness.heard(sent);
        tokio::spawn(heartbeat(Arc::downgrade(&conn)));
        Ok(conn)
    }

    /// Marks a blocking wait in flight.
    pub(crate) fn start_wait(&self) {
        self.wait.store(WAITING, Ordering::SeqCst);
    }

    /// Marks the wait over: true when it ended by itself, false when a
    /// cancel request was sent for it, and the connection must not be used
    /// again (drop it: closing it frees whatever the wait was granted).
    pub(crate) fn finish_wait(&self) -> bool {
        self.wait
            .compare_exchange(WAITING, NOT_WAITING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Claims the wait in flight for a cancel request: true when one must be
    /// sent. PostgreSQL cancels whatever the server process runs when the
    /// request arrives, so a request for a wait that already ended would
    /// cancel the connection's next statement (another guest's wait, an
    /// unlock); a wait over says false, and a claimed one keeps its
    /// connection from being used again ([`PgConn::finish_wait`]).
    pub(crate) fn cancel_wait(&self) -> bool {
        self.wait
            .compare_exchange(WAITING, CANCELLED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// One round trip: records it in the clock when answered.
    ///
    /// # Errors
    /// `Unavailable` when it failed.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub(crate) async fn ping(&self) -> Result<(), BackendError> {
        let sent = Instant::now();
        self.client
            .query(&self.statements.ping, &[])
            .await
            .map_err(|e| classify(&e, "answer a heartbeat"))?;
        self.liveness.heard(sent);
        Ok(())
    }

    /// Asks the server to cancel what this connection runs now (a
    /// `pg_advisory_lock` wait), over a connection of its own.
    pub(crate) async fn cancel(&self) {
        let token = self.client.cancel_token();
        if let Err(error) = token.cancel_query(self.tls.clone()).await {
            tracing::debug!(%error, "cancelling a PostgreSQL lock wait failed");
        }
    }

    /// Whether the connection is over (closed, its clock ran out, or a
    /// cancel request was sent on it).
    pub(crate) fn is_over(&self) -> bool {
        self.liveness.is_ended()
            || self.client.is_closed()
            || self.wait.load(Ordering::SeqCst) == CANCELLED
    }

    /// What the connection vouches for now.
    pub(crate) fn health(&self) -> SessionHealth {
        self.liveness
            .health(!self.client.is_closed(), Instant::now())
    }
}

impl NodeSession for PgConn {
    fn health(&self) -> SessionHealth {
        PgConn::health(self)
    }

    fn until_over(self: Arc<Self>) -> WatchFuture {
        Box::pin(async move { self.liveness.until_ended().await })
    }
}

/// How long the server lets one of this host's connections idle before it
/// ends it: the session timeout and a fifth more (at least 500 ms). The host
/// reports its grants lost at the session timeout after it last heard from
/// the server; the margin keeps the server from freeing them (and granting
/// another host) at the same moment, whatever the two clocks' scheduling.
pub(crate) fn server_idle_timeout(session_timeout: Duration) -> Duration {
    session_timeout + (session_timeout / 5).max(Duration::from_millis(500))
}

/// `HOST:PORT/DATABASE` of a configuration, for messages (no password).
pub(crate) fn describe(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let database = config.get_dbname().or(config.get_user()).unwrap_or("");
    format!("{host}:{port}/{database}")
}

/// `call` (what the server is `doing`, for the error), given up with
/// `Unavailable` naming it once `limit` passed: a server that accepts a
/// connection and then stalls must not hold a caller for ever.
pub(crate) async fn within<T>(
    limit: Duration,
    doing: &str,
    call: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
        Err(BackendError::Unavailable(format!(
            "PostgreSQL did not answer within {limit:?} while {doing}"
        )))
    })
}

async fn prepare(client: &Client, schema: &Schema) -> Result<Statements, BackendError> {
    let token = schema.token_sequence();
    let try_lock = |function: &str| {
        format!(
            "WITH l AS MATERIALIZED (SELECT {function}($1) AS ok) \
             SELECT ok, CASE WHEN ok THEN nextval('{token}') END FROM l"
        )
    };
    // Also returns the server processes that held or queued for the key
    // when this request queued: the holders it may follow (see `recipe`).
    let lock = |function: &str| {
        format!(
            "WITH t AS MATERIALIZED (SELECT set_config('lock_timeout', $2, false), \
               array(SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid::bigint = $3 \
                     AND objid::bigint = $4 AND objsubid = 1 AND pid IS NOT NULL) AS ahead), \
             l AS MATERIALIZED (SELECT {function}($1) FROM t) \
             SELECT nextval('{token}'), (SELECT ahead FROM t) FROM l"
        )
    };
    let prepare = |text: String| async move {
        client
            .prepare(&text)
            .await
            .map_err(|e| classify(&e, "prepare the lock statements"))
    };
    let (try_exclusive, try_shared, lock_exclusive, lock_shared) = tokio::try_join!(
        prepare(try_lock("pg_try_advisory_lock")),
        prepare(try_lock("pg_try_advisory_lock_shared")),
        prepare(lock("pg_advisory_lock")),
        prepare(lock("pg_advisory_lock_shared")),
    )?;
    let waiters = "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' \
                   AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1 \
                   AND NOT granted AND ($3 OR mode = 'ExclusiveLock'))";
    let (unlock_exclusive, unlock_shared, ping, waiters, alive) = tokio::try_join!(
        prepare("SELECT pg_advisory_unlock($1)".into()),
        prepare("SELECT pg_advisory_unlock_shared($1)".into()),
        prepare("SELECT 1".into()),
        prepare(waiters.into()),
        prepare(
            "SELECT count(*) FILTER (WHERE wait_event = 'ClientRead' OR wait_event_type = 'Lock'), \
             count(*) FROM pg_stat_activity WHERE pid = ANY($1)"
                .into()
        ),
    )?;
    Ok(Statements {
        try_exclusive,
        try_shared,
        lock_exclusive,
        lock_shared,
        unlock_exclusive,
        unlock_shared,
        ping,
        waiters,
        alive,
    })
}

/// Pings every tenth of the session timeout while anyone holds the
/// connection, and computes its health on every tick, so grant subscribers
/// learn of silence from the clock, not from the next request. Pauses while
/// a lock wait blocks the connection.
async fn heartbeat(conn: Weak<PgConn>) {
    // The next wake: a tick, or the clock's end if sooner, so subscribers
    // learn `lost` at it (see `Liveness::deadline`), not up to two intervals
    // later.
    let next = |conn: &PgConn, interval: Duration| {
        (Instant::now() + interval).min(conn.liveness.deadline())
    };
    let (interval, mut wake) = match conn.upgrade() {
        Some(conn) => {
            let interval = conn.liveness.heartbeat_interval();
            (interval, next(&conn, interval))
        }
        None => return,
    };
    loop {
        tokio::time::sleep_until(wake).await;
        let Some(conn) = conn.upgrade() else {
            return;
        };
        if conn.wait.load(Ordering::SeqCst) != NOT_WAITING {
            // A blocked wait answers nothing: no clock to keep until it ends.
            wake = Instant::now() + interval;
            continue;
        }
        if conn.health() == SessionHealth::Ended {
            return;
        }
        // An unanswered ping leaves the clock where it was; the health
        // computed at its end (or at the clock's end) says what that allows.
        let _ = tokio::time::timeout_at(next(&conn, interval), conn.ping()).await;
        if conn.health() == SessionHealth::Ended {
            return;
        }
        wake = next(&conn, interval);
    }
}
