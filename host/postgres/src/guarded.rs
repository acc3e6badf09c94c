//! The guarded store on PostgreSQL ([`wardlock_backend::guarded`]): a row of
//! the schema's `data` table per (lock, key), with the writer's fencing token
//! and a revision from the schema's `revision` sequence.
//!
//! A write is one statement on the connection that holds the host's advisory
//! lock, so it is one transaction with its check: it inserts (or updates)
//! only if `pg_locks` shows that very connection (`pg_backend_pid()`)
//! holding the lock's key exclusively. A connection the server ended (a
//! terminated backend, a restart, a host silent past its session timeout)
//! runs nothing, and its locks went with it; a stale writer's statement
//! therefore writes nothing, however late it arrives, and the writer is told
//! `Lost`.
//!
//! Under host-local hand-off the host's lock covers every local grant of the
//! name, so that the grant is still this session's, and its connection still
//! live, is checked before the statement leaves (a released grant is
//! `UnknownGrant`, a connection the host's clock judged over is `Lost`).

use std::sync::Arc;

use wardlock_backend::guarded::{MAX_LISTED_KEYS, listed_keys};
use wardlock_backend::handoff::SessionHealth;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, GuardedEntry, GuardedKey};

use crate::Shared;
use crate::conn::PgConn;
use tokio_postgres::SimpleQueryMessage;

use crate::errors::classify;
use crate::key::{advisory_key, pg_locks_ids};

/// The exclusive grant a guarded write goes through.
pub(crate) struct Holder {
    pub(crate) name: LockName,
    pub(crate) token: u64,
    /// The connection holding the host's lock.
    pub(crate) generation: u64,
}

/// The holder's connection while the host's clock vouches for it.
pub(crate) fn holding_conn(shared: &Shared, holder: &Holder) -> Result<Arc<PgConn>, BackendError> {
    let conn = shared
        .pool
        .conn_of(holder.generation)
        .ok_or(BackendError::Lost)?;
    if conn.health() == SessionHealth::Ended {
        return Err(BackendError::Lost);
    }
    Ok(conn)
}

/// What a failed write means: its connection ended under it (terminated,
/// restarted, cut), which ended the lock with it, is `Lost`; a refusal by
/// the server is what [`classify`] says.
pub(crate) fn write_failed(error: &tokio_postgres::Error, what: &str) -> BackendError {
    if error.as_db_error().is_none() {
        return BackendError::Lost;
    }
    classify(error, what)
}

/// The check that the statement's own connection holds the key
/// (`classid`, `objid`) exclusively.
fn held(classid: u32, objid: u32) -> String {
    format!(
        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() \
         AND granted AND mode = 'ExclusiveLock' AND classid::bigint = {classid} \
         AND objid::bigint = {objid} AND objsubid = 1"
    )
}

/// `text` as an SQL string literal (`E'…'`, with `\` and `'` escaped). Lock
/// names and guarded keys have no control characters (they are validated).
pub(crate) fn literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// `bytes` as an SQL `bytea` expression.
pub(crate) fn bytea(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("decode('{hex}', 'hex')")
}

/// Runs a write on the holding connection as one simple query: an implicit
/// transaction whose commit waits for the disk (`SET LOCAL
/// synchronous_commit = on`: the engine's connections otherwise commit
/// without waiting, see `conn`). One message, so nothing else pipelined on
/// the connection runs inside it. The rows' first column, as text.
async fn durable_write(
    conn: &PgConn,
    statement: &str,
    what: &str,
) -> Result<Vec<String>, BackendError> {
    let messages = conn
        .client
        .simple_query(&format!("SET LOCAL synchronous_commit = on; {statement}"))
        .await
        .map_err(|e| write_failed(&e, what))?;
    Ok(messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .collect())
}

/// Writes `value` at `key` of the holder's lock.
///
/// # Errors
/// `Lost` when the holder's lock is gone; `Unavailable` when the server
/// cannot be reached.
///
/// # Cancellation safety
/// One transaction: a dropped write either committed or did not.
pub(crate) async fn put(
    shared: &Shared,
    holder: &Holder,
    key: &GuardedKey,
    value: &[u8],
) -> Result<u64, BackendError> {
    let conn = holding_conn(shared, holder)?;
    let (classid, objid) = pg_locks_ids(advisory_key(&holder.name));
    let token = i64::try_from(holder.token).unwrap_or(i64::MAX);
    let statement = format!(
        "WITH held AS ({held} LIMIT 1) \
         INSERT INTO {data} (lock, key, value, token, revision) \
         SELECT {name}, {key}, {value}, {token}, nextval('{revision}') FROM held \
         ON CONFLICT (lock, key) DO UPDATE SET value = excluded.value, token = excluded.token, \
         revision = excluded.revision RETURNING revision",
        held = held(classid, objid),
        data = shared.schema.data_table(),
        revision = shared.schema.revision_sequence(),
        name = literal(holder.name.as_str()),
        key = literal(key.as_str()),
        value = bytea(value),
    );
    let rows = durable_write(&conn, &statement, "write a guarded entry").await?;
    let revision = rows.first().ok_or(BackendError::Lost)?;
    revision.parse().map_err(|_| {
        BackendError::Unavailable(format!("PostgreSQL answered a revision {revision:?}"))
    })
}

/// Deletes `key` of the holder's lock: whether it existed.
///
/// # Errors
/// As [`put`].
///
/// # Cancellation safety
/// As [`put`].
pub(crate) async fn delete(
    shared: &Shared,
    holder: &Holder,
    key: &GuardedKey,
) -> Result<bool, BackendError> {
    let conn = holding_conn(shared, holder)?;
    let (classid, objid) = pg_locks_ids(advisory_key(&holder.name));
    let statement = format!(
        "WITH held AS ({held} LIMIT 1), \
         gone AS (DELETE FROM {data} WHERE lock = {name} AND key = {key} \
                  AND EXISTS (SELECT 1 FROM held) RETURNING 1) \
         SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM held) THEN 'lost' \
                     WHEN EXISTS (SELECT 1 FROM gone) THEN 'deleted' ELSE 'absent' END",
        held = held(classid, objid),
        data = shared.schema.data_table(),
        name = literal(holder.name.as_str()),
        key = literal(key.as_str()),
    );
    let rows = durable_write(&conn, &statement, "delete a guarded entry").await?;
    match rows.first().map(String::as_str) {
        Some("deleted") => Ok(true),
        Some("absent") => Ok(false),
        _ => Err(BackendError::Lost),
    }
}

/// Reads `key` of lock `name`.
///
/// # Errors
/// `Unavailable` when the server cannot be reached.
///
/// # Cancellation safety
/// Cancel safe: a read.
pub(crate) async fn get(
    shared: &Shared,
    name: &LockName,
    key: &GuardedKey,
) -> Result<Option<GuardedEntry>, BackendError> {
    let main = shared.pool.main().await?;
    let statement = format!(
        "SELECT value, token, revision FROM {} WHERE lock = $1 AND key = $2",
        shared.schema.data_table()
    );
    let rows = main
        .client
        .query(&statement, &[&name.as_str(), &key.as_str()])
        .await
        .map_err(|e| classify(&e, "read a guarded entry"))?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let token: i64 = row.get(1);
    let revision: i64 = row.get(2);
    Ok(Some(GuardedEntry {
        value: row.get(0),
        token: u64::try_from(token).unwrap_or(0),
        revision: u64::try_from(revision).unwrap_or(0),
    }))
}

/// The keys of lock `name` starting with `prefix`, sorted, at most `limit`.
///
/// # Errors
/// As [`get`].
///
/// # Cancellation safety
/// As [`get`].
pub(crate) async fn keys(
    shared: &Shared,
    name: &LockName,
    prefix: &str,
    limit: u32,
) -> Result<Vec<String>, BackendError> {
    let main = shared.pool.main().await?;
    let statement = format!(
        "SELECT key FROM {} WHERE lock = $1 AND starts_with(key, $2) ORDER BY key LIMIT $3",
        shared.schema.data_table()
    );
    let limit = i64::from(limit.min(MAX_LISTED_KEYS));
    let rows = main
        .client
        .query(&statement, &[&name.as_str(), &prefix, &limit])
        .await
        .map_err(|e| classify(&e, "list guarded keys"))?;
    let keys = rows.iter().map(|row| row.get::<_, String>(0));
    Ok(listed_keys(keys, prefix, u32::try_from(limit).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_quotes_and_backslashes() {
        assert_eq!(literal(r"it's a \ key"), r"E'it''s a \\ key'");
        assert_eq!(bytea(&[0, 0xff, b'a']), "decode('00ff61', 'hex')");
    }
}
