//! Refusing a pooler that would break session locks: behind PgBouncer in
//! transaction (or statement) pooling, consecutive statements of one client
//! connection may run in different server sessions, and one server session
//! serves several clients, so an advisory lock taken by one statement is
//! held by whichever client the session serves next. wardlock checks at
//! start that each of two connections keeps one server session of its own.

use tokio_postgres::{Client, SimpleQueryMessage};

use wardlock_backend::BackendError;

use crate::errors::classify;

/// How many rounds the check runs (each: both connections read their
/// backend's pid).
const ROUNDS: usize = 3;

/// The connection's backend pid, over the simple query protocol (a pooler in
/// transaction mode may not keep prepared statements, and this check must
/// reach its verdict, not fail on the way).
async fn pid(client: &Client) -> Result<i32, BackendError> {
    let messages = client
        .simple_query("SELECT pg_backend_pid()")
        .await
        .map_err(|e| classify(&e, "read the backend's pid"))?;
    messages
        .iter()
        .find_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).and_then(|pid| pid.parse().ok()),
            _ => None,
        })
        .ok_or_else(|| BackendError::Unavailable("the server sent no backend pid".into()))
}

/// The oldest PostgreSQL the engine works with: `idle_session_timeout`
/// (the server's end of a silent host's session) and `pg_locks.waitstart`
/// came in 14.
const OLDEST: i64 = 140_000;

/// Refuses a server older than PostgreSQL 14.
///
/// # Errors
/// `Refused` naming the version.
///
/// # Cancellation safety
/// Cancel safe: a read.
pub(crate) async fn check_version(client: &Client, target: &str) -> Result<(), BackendError> {
    let messages = client
        .simple_query("SHOW server_version_num")
        .await
        .map_err(|e| classify(&e, "read the server's version"))?;
    let version: i64 = messages
        .iter()
        .find_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).and_then(|v| v.parse().ok()),
            _ => None,
        })
        .unwrap_or(0);
    if version < OLDEST {
        return Err(BackendError::Refused(format!(
            "{target} runs PostgreSQL {}.{}: wardlock needs 14 or newer (idle_session_timeout ends a silent host's session on the server)",
            version / 10_000,
            version % 10_000 / 100
        )));
    }
    Ok(())
}

/// Refuses when `first` and `second` (two connections to `target`) do not
/// each keep one server session of their own.
///
/// # Errors
/// `Refused` naming the pooling mode and what to do.
///
/// # Cancellation safety
/// Cancel safe: reads only.
pub(crate) async fn check(
    first: &Client,
    second: &Client,
    target: &str,
) -> Result<(), BackendError> {
    let mine = pid(first).await?;
    for _ in 0..ROUNDS {
        let theirs = pid(second).await?;
        let again = pid(first).await?;
        if theirs == mine || again != mine {
            return Err(BackendError::Refused(format!(
                "{target} does not keep one server session per connection (backend pids {mine}, {theirs}, {again}): a connection pooler in transaction or statement pooling mode (PgBouncer's pool_mode = transaction) hands one session's advisory locks to other clients, so wardlock's locks would silently exclude nothing. Connect to PostgreSQL directly, or use session pooling (pool_mode = session)"
            )));
        }
    }
    Ok(())
}
