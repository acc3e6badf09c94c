//! A host's connections: one main connection for everything that never
//! blocks (uncontended grants, releases, heartbeats, the guarded store,
//! `pg_locks` reads), pipelined by tokio-postgres so unrelated requests do
//! not wait on each other's round trips; and at most `wait_connections`
//! more, each blocked in one queue or holding the one lock it waited for.
//!
//! A connection that holds a lock it waited for is not used to wait again:
//! its unlock would queue behind that wait. Once its lock is released it
//! goes back to the idle ones. So a host opens at most `1 +
//! wait_connections` connections to wait and hold, plus a short-lived one
//! per cancelled wait (PostgreSQL's cancel request) and the status tools'.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use wardlock_backend::BackendError;
use wardlock_backend::handoff::until;

use crate::conn::{Connector, PgConn, describe};

/// A connection that waited for a lock and holds it, with its slot.
struct Holding {
    conn: Arc<PgConn>,
    _slot: OwnedSemaphorePermit,
}

/// A waiting connection lent out, with its slot.
pub(crate) struct Lent {
    pub(crate) conn: Arc<PgConn>,
    pub(crate) slot: OwnedSemaphorePermit,
}

/// The host's connections (see the module doc).
pub(crate) struct Pool {
    pub(crate) connector: Connector,
    generations: AtomicU64,
    /// Serialises opening the main connection.
    opening: tokio::sync::Mutex<()>,
    main: Mutex<Option<Arc<PgConn>>>,
    idle: Mutex<Vec<Arc<PgConn>>>,
    slots: Arc<Semaphore>,
    holding: Mutex<HashMap<u64, Holding>>,
    /// The last attempt to open the main connection failed.
    unreachable: AtomicBool,
    closed: AtomicBool,
    wait_connections: usize,
    /// The pooler check and the schema, done once before the first lock.
    prepared: tokio::sync::OnceCell<()>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    pub(crate) fn new(connector: Connector, wait_connections: usize) -> Self {
        Pool {
            connector,
            generations: AtomicU64::new(0),
            opening: tokio::sync::Mutex::new(()),
            main: Mutex::new(None),
            idle: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(wait_connections)),
            holding: Mutex::new(HashMap::new()),
            unreachable: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            wait_connections,
            prepared: tokio::sync::OnceCell::new(),
        }
    }

    fn next_generation(&self) -> u64 {
        self.generations.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn closed_error() -> BackendError {
        BackendError::Unavailable("the PostgreSQL backend was shut down".into())
    }

    /// The main connection while it lives, without opening one.
    pub(crate) fn current_main(&self) -> Option<Arc<PgConn>> {
        locked(&self.main).clone()
    }

    /// The main connection, opening the next one when there is none or the
    /// last one ended.
    ///
    /// # Errors
    /// As [`PgConn::open`].
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub(crate) async fn main(&self) -> Result<Arc<PgConn>, BackendError> {
        if let Some(conn) = self.current_main().filter(|c| !c.is_over()) {
            return Ok(conn);
        }
        let _opening = self.opening.lock().await;
        if let Err(error) = self
            .prepared
            .get_or_try_init(|| self.prepare_database())
            .await
        {
            if matches!(error, BackendError::Unavailable(_)) {
                self.unreachable.store(true, Ordering::Relaxed);
            }
            return Err(error);
        }
        if self.closed.load(Ordering::Relaxed) {
            return Err(Self::closed_error());
        }
        if let Some(conn) = self.current_main().filter(|c| !c.is_over()) {
            return Ok(conn);
        }
        match PgConn::open(&self.connector, self.next_generation(), true).await {
            Ok(conn) => {
                self.unreachable.store(false, Ordering::Relaxed);
                *locked(&self.main) = Some(conn.clone());
                Ok(conn)
            }
            Err(error) => {
                self.unreachable.store(true, Ordering::Relaxed);
                Err(error)
            }
        }
    }

    /// Before the first lock: refuses a pooler that breaks session locks
    /// (`pooler`), then creates or checks wardlock's schema (`schema`).
    async fn prepare_database(&self) -> Result<(), BackendError> {
        // Bounded: a server that stalls here would hold the pool's opening,
        // and every lock request behind it, for ever.
        crate::conn::within(
            self.connector.session_timeout,
            "checking for a pooler and setting up wardlock's schema",
            self.check_and_set_up(),
        )
        .await
    }

    /// What [`Self::prepare_database`] does, unbounded.
    async fn check_and_set_up(&self) -> Result<(), BackendError> {
        let mut first = self.connector.connect_raw(None).await?;
        let second = self.connector.connect_raw(None).await?;
        let target = format!("PostgreSQL at {}", describe(&self.connector.client));
        crate::pooler::check_version(&first, &target).await?;
        crate::pooler::check(&first, &second, &target).await?;
        drop(second);
        self.connector.schema.set_up(&mut first).await
    }

    /// Whether the last attempt to open the main connection failed.
    pub(crate) fn is_unreachable(&self) -> bool {
        self.unreachable.load(Ordering::Relaxed)
    }

    /// A connection to wait on, and its slot: an idle one, or a new one
    /// while fewer than `wait_connections` are lent. Waits (FIFO) for a
    /// slot until `deadline`.
    ///
    /// # Errors
    /// `Timeout` past `deadline`; as [`PgConn::open`].
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped call keeps nothing.
    pub(crate) async fn lend(&self, deadline: Option<Instant>) -> Result<Lent, BackendError> {
        let slot = until(deadline, self.slots.clone().acquire_owned())
            .await?
            .map_err(|_| Self::closed_error())?;
        loop {
            let idle = locked(&self.idle).pop();
            match idle {
                Some(conn) if conn.is_over() => continue,
                Some(conn) => return Ok(Lent { conn, slot }),
                None => break,
            }
        }
        let opened = PgConn::open(&self.connector, self.next_generation(), true);
        let conn = until(deadline, opened).await??;
        Ok(Lent { conn, slot })
    }

    /// Takes back a lent connection that holds nothing.
    pub(crate) fn give_back(&self, lent: Lent) {
        if !lent.conn.is_over() && !self.closed.load(Ordering::Relaxed) {
            locked(&self.idle).push(lent.conn);
        }
    }

    /// Records that a lent connection now holds the lock it waited for.
    pub(crate) fn hold(&self, lent: Lent) {
        let generation = lent.conn.generation;
        locked(&self.holding).insert(
            generation,
            Holding {
                conn: lent.conn,
                _slot: lent.slot,
            },
        );
    }

    /// The connection of `generation` while it lives: the main one or one
    /// holding a lock it waited for.
    pub(crate) fn conn_of(&self, generation: u64) -> Option<Arc<PgConn>> {
        if let Some(main) = self.current_main().filter(|c| c.generation == generation) {
            return (!main.is_over()).then_some(main);
        }
        let holding = locked(&self.holding);
        let conn = &holding.get(&generation)?.conn;
        (!conn.is_over()).then(|| conn.clone())
    }

    /// Ends the hold of the connection of `generation` (its lock was
    /// unlocked, or it died): back to the idle ones if it lives.
    pub(crate) fn unhold(&self, generation: u64) {
        let holding = locked(&self.holding).remove(&generation);
        if let Some(holding) = holding
            && !holding.conn.is_over()
            && !self.closed.load(Ordering::Relaxed)
        {
            locked(&self.idle).push(holding.conn);
        }
    }

    /// How many connections are open now (for tests and `/readyz`).
    pub(crate) fn open_connections(&self) -> usize {
        let main = usize::from(self.current_main().is_some_and(|c| !c.is_over()));
        let idle = locked(&self.idle).iter().filter(|c| !c.is_over()).count();
        let holding = locked(&self.holding)
            .values()
            .filter(|h| !h.conn.is_over())
            .count();
        // Lent connections that wait are in neither list: count the slots.
        let lent = self
            .max_wait_connections()
            .saturating_sub(self.slots.available_permits())
            .saturating_sub(holding);
        main + idle + holding + lent
    }

    fn max_wait_connections(&self) -> usize {
        self.wait_connections
    }

    /// Every connection that may hold locks: releases them all
    /// (`pg_advisory_unlock_all`) and closes them (bounded by the connect
    /// timeout), so the server frees what remains at once.
    ///
    /// # Cancellation safety
    /// Cancel safe; a dropped close leaves the rest to the session timeout.
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.slots.close();
        let mut conns: Vec<Arc<PgConn>> = Vec::new();
        conns.extend(locked(&self.main).take());
        conns.extend(locked(&self.idle).drain(..));
        conns.extend(locked(&self.holding).drain().map(|(_, h)| h.conn));
        let limit = self.connector.connect_timeout;
        let mut closing = tokio::task::JoinSet::new();
        for conn in conns {
            closing.spawn(async move {
                let unlock_all = conn.client.batch_execute("SELECT pg_advisory_unlock_all()");
                let _ = tokio::time::timeout(limit, unlock_all).await;
                conn.liveness.end();
            });
        }
        while closing.join_next().await.is_some() {}
    }
}
