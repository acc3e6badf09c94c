//! Refusing a pooler that would break session locks: behind PgBouncer in
//! transaction (or statement) pooling, consecutive statements of one client
//! connection may run in different server sessions, and one server session
//! serves several clients, so an advisory lock taken by one statement is
//! held by whichever client the session serves next. wardlock checks at
//! start that each of two connections keeps one server session of its own.

use tokio_postgres::Client;

use wardlock_backend::BackendError;

use crate::errors::classify;

/// How many rounds the check runs (each: both connections read their
/// backend's pid).
const ROUNDS: usize = 3;

async fn pid(client: &Client) -> Result<i32, BackendError> {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(|e| classify(&e, "read the backend's pid"))?
        .try_get(0)
        .map_err(|e| classify(&e, "read the backend's pid"))
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
