//! The lock recipe: a host's one advisory lock per name (the node of
//! host-local hand-off), taken, waited for, given up, and watched for a
//! contender of another client behind it.
//!
//! PostgreSQL's lock manager is the queue: a request that conflicts with the
//! holders *or with a waiter ahead of it* waits behind them, and waiters are
//! granted in arrival order, shared requests together; `pg_try_advisory_lock`
//! follows the same rule (it fails while a conflicting request waits). So:
//! - first a try on the main connection (`pg_try_advisory_lock[_shared]`,
//!   one pipelined round trip; uncontended grants end here);
//! - if taken, and the caller waits: a connection of its own blocked in
//!   `pg_advisory_lock[_shared]`, with `lock_timeout` set to what is left of
//!   the deadline (the server withdraws the wait itself); a dropped wait is
//!   withdrawn with a cancel request, and a grant that raced with the cancel
//!   is unlocked at once.
//!
//! Each statement that takes a lock draws the grant's fencing token from the
//! schema's sequence after the lock is granted (see `schema`).
//!
//! The node: [`OwnedNode::path`] is the advisory key (decimal),
//! [`OwnedNode::prefix`] its mode as `pg_locks` names it (`ExclusiveLock`,
//! `ShareLock`), [`OwnedNode::generation`] the connection holding it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use wardlock_backend::handoff::{NodeRequest, OwnedNode, until};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Mode};

use crate::Shared;
use crate::conn::PgConn;
use crate::errors::{classify, is_cancelled, is_deadlock, is_lock_timeout};
use crate::key::advisory_key;
use crate::pool::Lent;

/// `pg_locks`' name of a mode.
pub(crate) fn lock_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Exclusive => "ExclusiveLock",
        Mode::Shared => "ShareLock",
    }
}

fn node(key: i64, mode: Mode, conn: &PgConn, token: i64) -> OwnedNode {
    OwnedNode {
        path: key.to_string(),
        prefix: lock_mode(mode).to_owned(),
        generation: conn.generation,
        token: u64::try_from(token).unwrap_or(0),
    }
}

/// The host's advisory lock for `request` (the recipe above). A connection
/// lost on the way (a server restart, a terminated backend) is not the
/// caller's concern: the request starts again on a new connection, with a
/// back-off, while its deadline allows and for at most one session timeout
/// after the first failure.
///
/// # Errors
/// `Timeout` past the deadline; `Unavailable` when the server cannot be
/// reached for a session timeout; `Refused` for a role the server refuses.
///
/// # Cancellation safety
/// Cancel safe: a dropped call leaves nothing held or queued (a try or a
/// wait already sent finishes in the background and is undone).
pub(crate) async fn acquire(
    shared: Arc<Shared>,
    request: NodeRequest,
) -> Result<Option<OwnedNode>, BackendError> {
    let mut give_up = None;
    let mut backoff = Duration::from_millis(20);
    loop {
        match attempt(&shared, &request).await {
            Err(BackendError::Unavailable(why)) => {
                let now = Instant::now();
                // One session timeout from the first failure, however long
                // the request waited before it.
                let give_up = *give_up.get_or_insert(now + shared.config.session_timeout);
                let until_at = request.deadline.map_or(give_up, |d| d.min(give_up));
                if now + backoff >= until_at {
                    return Err(BackendError::Unavailable(why));
                }
                tracing::debug!(%why, "a lock request starts again on a new connection");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
            other => return other,
        }
    }
}

/// One attempt of [`acquire`].
async fn attempt(
    shared: &Arc<Shared>,
    request: &NodeRequest,
) -> Result<Option<OwnedNode>, BackendError> {
    let (name, mode, deadline, wait) =
        (&request.name, request.mode, request.deadline, request.wait);
    let key = advisory_key(name);
    let main = until(deadline, shared.pool.main()).await??;
    if let Some(token) = until(deadline, try_lock(main.clone(), key, mode)).await?? {
        return Ok(Some(node(key, mode, &main, token)));
    }
    if !wait {
        return Ok(None);
    }
    let lent = shared.pool.lend(deadline).await?;
    wait_lock(shared, lent, name, key, mode, deadline).await
}

/// `pg_try_advisory_lock[_shared]` on `conn`: the token when granted. Run
/// in the caller's task (a task of its own costs two hand-overs per grant);
/// if the caller drops it while the statement is out, [`UndoTry`] unlocks
/// the key behind it, in case it was granted.
async fn try_lock(conn: Arc<PgConn>, key: i64, mode: Mode) -> Result<Option<i64>, BackendError> {
    let statement = match mode {
        Mode::Exclusive => &conn.statements.try_exclusive,
        Mode::Shared => &conn.statements.try_shared,
    };
    let mut undo = UndoTry {
        conn: Some(conn.clone()),
        key,
        mode,
    };
    let row = conn.client.query_one(statement, &[&key]).await;
    undo.conn = None;
    let row = row.map_err(|e| classify(&e, "take a lock"))?;
    let ok: bool = row.try_get(0).map_err(|e| classify(&e, "take a lock"))?;
    let token: Option<i64> = row.try_get(1).map_err(|e| classify(&e, "take a lock"))?;
    Ok(ok.then_some(token.unwrap_or(0)))
}

/// Unlocks a key whose try was dropped while out: sent after it on the same
/// connection, so it undoes a grant; after a refusal it unlocks nothing (no
/// other grant of this host holds the key on that connection: one task per
/// lock, and its earlier unlocks were sent before the try).
struct UndoTry {
    conn: Option<Arc<PgConn>>,
    key: i64,
    mode: Mode,
}

impl Drop for UndoTry {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            send_unlock(conn, self.key, self.mode, async {});
        }
    }
}

/// Unlocks `key` in `mode` on `conn` (a failure means the connection is
/// gone, and the lock with it).
async fn unlock(conn: &PgConn, key: i64, mode: Mode) {
    let statement = match mode {
        Mode::Exclusive => &conn.statements.unlock_exclusive,
        Mode::Shared => &conn.statements.unlock_shared,
    };
    if let Err(error) = conn.client.query(statement, &[&key]).await {
        tracing::debug!(%error, key, "unlocking failed (the connection is gone, and its locks)");
    }
}

/// Sends the unlock of `key` on `conn` now, before returning, and finishes
/// it (then `after`) in the background. Sent now: tokio-postgres puts a
/// statement on the connection's pipeline at its first poll, so whatever
/// this host sends on the connection afterwards — the next try of the same
/// lock — reaches the server behind the unlock and queues behind any other
/// client's waiter, without waiting for the unlock's answer (one round trip
/// less per re-acquire).
fn send_unlock(
    conn: Arc<PgConn>,
    key: i64,
    mode: Mode,
    after: impl Future<Output = ()> + Send + 'static,
) {
    let mut unlocking = Box::pin(async move {
        unlock(&conn, key, mode).await;
        after.await;
    });
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    if unlocking.as_mut().poll(&mut context).is_pending() {
        tokio::spawn(unlocking);
    }
}

/// What a blocked wait answered.
type WaitAnswer = Result<(i64, Lent), BackendError>;

/// Cancels a wait still in flight unless disarmed.
struct CancelOnDrop {
    conn: Option<Arc<PgConn>>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        // Only a wait still in flight is cancelled (a late request would
        // cancel the connection's next statement): see `PgConn::cancel_wait`.
        if let Some(conn) = self.conn.take()
            && conn.cancel_wait()
        {
            tokio::spawn(async move { conn.cancel().await });
        }
    }
}

/// Waits in `key`'s queue on the lent connection until granted or the
/// deadline.
async fn wait_lock(
    shared: &Arc<Shared>,
    lent: Lent,
    name: &LockName,
    key: i64,
    mode: Mode,
    deadline: Option<Instant>,
) -> Result<Option<OwnedNode>, BackendError> {
    let lock_timeout = match deadline {
        None => "0".to_owned(),
        Some(deadline) => {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                shared.pool.give_back(lent);
                return Err(BackendError::Timeout);
            }
            left.as_millis().max(1).to_string()
        }
    };
    let conn = lent.conn.clone();
    let (answer, answered) = oneshot::channel::<WaitAnswer>();
    let task_shared = shared.clone();
    let long_wait = shared.config.session_timeout / 10;
    conn.start_wait();
    tokio::spawn(async move {
        let conn = lent.conn.clone();
        let sent = Instant::now();
        let statement = match mode {
            Mode::Exclusive => &conn.statements.lock_exclusive,
            Mode::Shared => &conn.statements.lock_shared,
        };
        let (classid, objid) = crate::key::pg_locks_ids(key);
        let ids = (i64::from(classid), i64::from(objid));
        let result = conn
            .client
            .query_one(statement, &[&key, &lock_timeout, &ids.0, &ids.1])
            .await;
        // Granted on the server, whatever happens to the answer below.
        let granted = result.is_ok();
        let outcome = match result {
            Ok(row) => match (row.try_get::<_, i64>(0), row.try_get::<_, Vec<i32>>(1)) {
                (Ok(token), Ok(ahead)) => confirm(&conn, sent, long_wait, &ahead)
                    .await
                    .map(|()| token),
                (Err(e), _) | (_, Err(e)) => Err(classify(&e, "take a lock")),
            },
            Err(e) if is_lock_timeout(&e) || is_cancelled(&e) => Err(BackendError::Timeout),
            Err(e) if is_deadlock(&e) => Err(BackendError::WouldDeadlock(format!(
                "PostgreSQL found a deadlock through this wait ({})",
                e.as_db_error().map_or("", |db| db.message())
            ))),
            Err(e) => Err(classify(&e, "wait for a lock")),
        };
        if !conn.finish_wait() {
            // The caller is gone and a cancel request is on its way: the
            // connection is not used again, and closing it frees a grant
            // that raced with the cancel.
            drop(lent);
            return;
        }
        match outcome {
            Ok(token) => {
                // The caller is gone: give the grant up.
                if let Err(Ok((_, lent))) = answer.send(Ok((token, lent))) {
                    unlock(&lent.conn, key, mode).await;
                    task_shared.pool.give_back(lent);
                }
            }
            Err(error) if granted => {
                // Granted, but the grant could not be confirmed or read: the
                // connection holds the lock, and given back it would keep it
                // for good (reused, it would take it a second time). Closing
                // it frees the lock.
                drop(lent);
                let _ = answer.send(Err(error));
            }
            Err(error) => {
                task_shared.pool.give_back(lent);
                let _ = answer.send(Err(error));
            }
        }
    });
    let mut cancel = CancelOnDrop {
        conn: Some(conn.clone()),
    };
    // The server ends the wait at `lock_timeout`; the local deadline (a
    // little later) covers a server that stopped answering.
    let local_deadline = deadline.map(|d| d + Duration::from_millis(500));
    let answer = until(local_deadline, answered).await;
    let answer = match answer {
        Ok(Ok(answer)) => {
            cancel.conn = None;
            answer
        }
        Ok(Err(_)) => {
            cancel.conn = None;
            return Err(BackendError::Unavailable(
                "the lock wait's task ended".into(),
            ));
        }
        // Timed out locally: the guard cancels the wait on the server.
        Err(timeout) => return Err(timeout),
    };
    match answer {
        Ok((token, lent)) => {
            let owned = node(key, mode, &lent.conn, token);
            shared.pool.hold(lent);
            tracing::trace!(%name, key, "granted after a wait");
            Ok(Some(owned))
        }
        Err(error) => Err(error),
    }
}

/// Before a grant that followed a wait is handed out:
/// - "last heard" must be a time the server saw this connection: the wait's
///   own send time, unless it is more than a tenth of the session timeout
///   past; then one more round trip;
/// - every server process that held or queued ahead (`ahead`) must be shown
///   to have let the lock go by an unlock, not by its end (terminated,
///   crashed, timed out). A process that ends sends its client the FATAL
///   first, then frees its locks, and only later leaves `pg_stat_activity`:
///   so being listed there proves nothing (a CI run granted a waiter while
///   the terminated holder was still listed, and the holder's host read
///   `lost` 49 µs after the grant). What proves it: the process, read after
///   this grant, is blocked reading from its client (`ClientRead`) or
///   waiting for a lock — an ending process leaves those states before it
///   frees its locks and never enters them again. A process in neither state
///   (running a statement) is read again every millisecond, for at most a
///   tenth of the session timeout (`long_wait`, the host's heartbeat
///   interval, time enough for an old holder's host to read `lost`). One
///   that is gone ended: the grant is held back `long_wait` so its host
///   reads `lost` first even on a loaded machine.
async fn confirm(
    conn: &PgConn,
    sent: Instant,
    long_wait: Duration,
    ahead: &[i32],
) -> Result<(), BackendError> {
    let mut ahead: Vec<i32> = ahead
        .iter()
        .copied()
        .filter(|&pid| pid != conn.pid)
        .collect();
    ahead.sort_unstable();
    ahead.dedup();
    if ahead.is_empty() {
        if sent.elapsed() <= long_wait {
            conn.liveness.heard(sent);
            return Ok(());
        }
        return conn.ping().await;
    }
    let first_asked = Instant::now();
    loop {
        let asked = Instant::now();
        let row = conn
            .client
            .query_one(&conn.statements.alive, &[&ahead])
            .await
            .map_err(|e| classify(&e, "confirm a grant"))?;
        conn.liveness.heard(asked);
        let count = |column: usize| -> Result<usize, BackendError> {
            let n: i64 = row
                .try_get(column)
                .map_err(|e| classify(&e, "confirm a grant"))?;
            Ok(usize::try_from(n).unwrap_or(0))
        };
        let (settled, present) = (count(0)?, count(1)?);
        if present < ahead.len() {
            tracing::debug!("a process ahead ended: the grant waits its grace");
            tokio::time::sleep(long_wait).await;
            return Ok(());
        }
        if settled == ahead.len() {
            return Ok(());
        }
        if first_asked.elapsed() >= long_wait {
            tracing::debug!("a process ahead stayed busy for the grace: granted");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Gives the host's node up, in the background.
pub(crate) fn release(shared: &Arc<Shared>, node: OwnedNode) {
    let Ok(key) = node.path.parse::<i64>() else {
        return;
    };
    let mode = if node.prefix == lock_mode(Mode::Shared) {
        Mode::Shared
    } else {
        Mode::Exclusive
    };
    let Some(conn) = shared.pool.conn_of(node.generation) else {
        // The connection is gone, and its locks with it.
        shared.pool.unhold(node.generation);
        return;
    };
    let shared = shared.clone();
    let generation = node.generation;
    send_unlock(
        conn,
        key,
        mode,
        async move { shared.pool.unhold(generation) },
    );
}

/// Resolves when another client's request that conflicts with the host's
/// node (held in `mode`) waits for `name`: `pg_locks` read on the main
/// connection every `contender_poll` (no notification reaches a holder when
/// someone queues behind it). Never resolves once the node's connection is
/// over.
pub(crate) async fn remote_contender(
    shared: Arc<Shared>,
    name: LockName,
    generation: u64,
    mode: Mode,
) {
    let key = advisory_key(&name);
    let (classid, objid) = crate::key::pg_locks_ids(key);
    let any_mode = mode == Mode::Exclusive;
    loop {
        let Some(holder) = shared.pool.conn_of(generation) else {
            return std::future::pending().await;
        };
        drop(holder);
        if let Ok(main) = shared.pool.main().await {
            let found = main
                .client
                .query_one(
                    &main.statements.waiters,
                    &[&i64::from(classid), &i64::from(objid), &any_mode],
                )
                .await
                .ok()
                .and_then(|row| row.try_get::<_, bool>(0).ok());
            if found == Some(true) {
                return;
            }
        }
        tokio::time::sleep(shared.config.contender_poll).await;
    }
}
