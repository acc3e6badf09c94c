//! The key-value store on PostgreSQL ([`wardlock_backend::keyvalue`]): a row
//! of the schema's `kv` table per (bucket, key), the value as written
//! (`SELECT value FROM wardlock.kv WHERE bucket = 'default'`), its version
//! drawn from the schema's `revision` sequence (never repeated).
//!
//! A batch is one PL/pgSQL block in one implicit transaction, on the
//! connection that holds the first fence grant's advisory lock (or the main
//! connection, unfenced): it checks in `pg_locks` that every fence grant's
//! connection still holds its lock's key exclusively, then applies each
//! write with the version it expects, and raises an error (rolling all of it
//! back) at the first check that fails. A connection the server ended runs
//! nothing, and its locks went with it: a stale writer's block therefore
//! writes nothing, however late it arrives.
//!
//! A fence grant held on another connection than the one the block runs on
//! is checked by that connection's server process id: its lock could end
//! between that check and the commit (only a lock held by the block's own
//! connection cannot). Under host-local hand-off the declared locks of one
//! host are usually on one connection.

use std::sync::Arc;

use crate::Shared;
use crate::conn::PgConn;
use crate::errors::classify;
use crate::guarded::{Holder, bytea, holding_conn, literal, write_failed};
use crate::key::{advisory_key, pg_locks_ids};
use wardlock_backend::BackendError;
use wardlock_backend::keyvalue::{Bucket, Expect, KvCommit, KvEntry, KvKey, KvWrite};

/// The message of the block's error when a fence grant no longer stands.
const LOST: &str = "wardlock: lost";
/// The message prefix of the block's error when write N's expectation fails.
const CONFLICT: &str = "wardlock: conflict ";

/// The condition that server process `pid` (an SQL expression) holds the
/// advisory key of `holder`'s lock exclusively.
fn held_by(pid: &str, holder: &Holder) -> String {
    let (classid, objid) = pg_locks_ids(advisory_key(&holder.name));
    format!(
        "EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = {pid} \
         AND granted AND mode = 'ExclusiveLock' AND classid::bigint = {classid} \
         AND objid::bigint = {objid} AND objsubid = 1)"
    )
}

/// The PL/pgSQL block that applies `writes` to `bucket` in table `table`
/// (versions from sequence `versions`), after checking `fence` (each with
/// the process id expression of its connection).
fn block(
    table: &str,
    versions: &str,
    bucket: &Bucket,
    writes: &[KvWrite],
    fence: &[(String, &Holder)],
) -> String {
    let mut body = String::new();
    if !fence.is_empty() {
        let held: Vec<String> = fence.iter().map(|(pid, h)| held_by(pid, h)).collect();
        body.push_str(&format!(
            "IF NOT ({}) THEN RAISE EXCEPTION '{LOST}'; END IF;\n",
            held.join(" AND ")
        ));
    }
    let bucket = literal(bucket.as_str());
    for (index, write) in writes.iter().enumerate() {
        let key = literal(write.key.as_str());
        let conflict = format!("IF NOT FOUND THEN RAISE EXCEPTION '{CONFLICT}{index}'; END IF;\n");
        let at = |version: u64| i64::try_from(version).unwrap_or(i64::MAX);
        match (&write.value, write.expect) {
            (Some(value), Expect::Any) => body.push_str(&format!(
                "INSERT INTO {table} (bucket, key, value, version) \
                 VALUES ({bucket}, {key}, {value}, nextval('{versions}')) \
                 ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value, \
                 version = excluded.version;\n",
                value = bytea(value)
            )),
            (Some(value), Expect::Absent) => body.push_str(&format!(
                "INSERT INTO {table} (bucket, key, value, version) \
                 VALUES ({bucket}, {key}, {value}, nextval('{versions}')) \
                 ON CONFLICT (bucket, key) DO NOTHING;\n{conflict}",
                value = bytea(value)
            )),
            (Some(value), Expect::Version(version)) => body.push_str(&format!(
                "UPDATE {table} SET value = {value}, version = nextval('{versions}') \
                 WHERE bucket = {bucket} AND key = {key} AND version = {version};\n{conflict}",
                value = bytea(value),
                version = at(version)
            )),
            (None, Expect::Any) => body.push_str(&format!(
                "DELETE FROM {table} WHERE bucket = {bucket} AND key = {key};\n"
            )),
            (None, Expect::Absent) => body.push_str(&format!(
                "PERFORM 1 FROM {table} WHERE bucket = {bucket} AND key = {key};\n\
                 IF FOUND THEN RAISE EXCEPTION '{CONFLICT}{index}'; END IF;\n"
            )),
            (None, Expect::Version(version)) => body.push_str(&format!(
                "DELETE FROM {table} WHERE bucket = {bucket} AND key = {key} \
                 AND version = {version};\n{conflict}",
                version = at(version)
            )),
        }
    }
    format!("DO $wardlock$ BEGIN\n{body}END $wardlock$;")
}

/// Applies `writes` to `bucket` in one transaction that checks `fence`
/// first.
///
/// # Errors
/// `Lost` when a fence grant's lock is gone (nothing written);
/// `Unavailable` when the server cannot be reached (unfenced: the batch may
/// have committed); `Refused` when the server refuses this role.
///
/// # Cancellation safety
/// One transaction: a dropped batch either committed whole or not at all.
pub(crate) async fn write(
    shared: &Shared,
    bucket: &Bucket,
    writes: &[KvWrite],
    fence: &[Holder],
) -> Result<KvCommit, BackendError> {
    let conns = fence
        .iter()
        .map(|holder| holding_conn(shared, holder))
        .collect::<Result<Vec<Arc<PgConn>>, _>>()?;
    let conn = match conns.first() {
        Some(conn) => conn.clone(),
        None => shared.pool.main().await?,
    };
    let checks: Vec<(String, &Holder)> = fence
        .iter()
        .zip(&conns)
        .map(|(holder, held)| {
            let pid = if Arc::ptr_eq(held, &conn) {
                "pg_backend_pid()".to_owned()
            } else {
                held.pid.to_string()
            };
            (pid, holder)
        })
        .collect();
    let statement = block(
        &shared.schema.kv_table(),
        &shared.schema.revision_sequence(),
        bucket,
        writes,
        &checks,
    );
    let answer = conn
        .client
        .simple_query(&format!("SET LOCAL synchronous_commit = on; {statement}"))
        .await;
    let error = match answer {
        Ok(_) => return Ok(KvCommit::Committed),
        Err(error) => error,
    };
    let message = error.as_db_error().map(|db| db.message().to_owned());
    match message.as_deref() {
        Some(LOST) => Err(BackendError::Lost),
        Some(text) if text.starts_with(CONFLICT) => {
            let index: Option<usize> = text[CONFLICT.len()..].parse().ok();
            match index.and_then(|i| writes.get(i)) {
                Some(write) => Ok(KvCommit::Conflict(write.key.clone())),
                None => Err(BackendError::Unavailable(format!(
                    "PostgreSQL answered a key-value batch with {text:?}"
                ))),
            }
        }
        _ if fence.is_empty() => Err(classify(&error, "apply a key-value batch")),
        _ => Err(write_failed(&error, "apply a key-value batch")),
    }
}

/// The entry `key` of `bucket`.
///
/// # Errors
/// `Unavailable` when the server cannot be reached.
///
/// # Cancellation safety
/// Cancel safe: a read.
pub(crate) async fn get(
    shared: &Shared,
    bucket: &Bucket,
    key: &KvKey,
) -> Result<Option<KvEntry>, BackendError> {
    let main = shared.pool.main().await?;
    let statement = format!(
        "SELECT value, version FROM {} WHERE bucket = $1 AND key = $2",
        shared.schema.kv_table()
    );
    let rows = main
        .client
        .query(&statement, &[&bucket.as_str(), &key.as_str()])
        .await
        .map_err(|e| classify(&e, "read a key-value entry"))?;
    Ok(rows.first().map(|row| KvEntry {
        value: row.get(0),
        version: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
    }))
}

/// A page of `bucket`'s keys, in byte order (the server skips and limits).
///
/// # Errors
/// As [`get`].
///
/// # Cancellation safety
/// As [`get`].
pub(crate) async fn keys(
    shared: &Shared,
    bucket: &Bucket,
    skip: u64,
    limit: u32,
) -> Result<Vec<String>, BackendError> {
    let main = shared.pool.main().await?;
    let statement = format!(
        "SELECT key FROM {} WHERE bucket = $1 ORDER BY key COLLATE \"C\" OFFSET $2 LIMIT $3",
        shared.schema.kv_table()
    );
    let (offset, count) = (
        i64::try_from(skip).unwrap_or(i64::MAX),
        i64::from(limit.min(wardlock_backend::keyvalue::MAX_LISTED_KEYS)),
    );
    let rows = main
        .client
        .query(&statement, &[&bucket.as_str(), &offset, &count])
        .await
        .map_err(|e| classify(&e, "list key-value keys"))?;
    Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_checks_the_fence_then_each_write_with_its_expectation() {
        let bucket = Bucket::default();
        let key = |k: &str| KvKey::new(k).expect("key");
        let writes = [
            KvWrite::put(key("it's"), b"1".to_vec()),
            KvWrite {
                key: key("n"),
                value: Some(b"2".to_vec()),
                expect: Expect::Version(7),
            },
        ];
        let holder = Holder {
            name: wardlock_backend::name::LockName::new("counter").expect("name"),
            token: 1,
            generation: 1,
        };
        let text = block(
            "\"w\".kv",
            "\"w\".revision",
            &bucket,
            &writes,
            &[("pg_backend_pid()".into(), &holder)],
        );
        assert!(
            text.starts_with("DO $wardlock$ BEGIN\nIF NOT (EXISTS"),
            "{text}"
        );
        assert!(
            text.contains(&format!("RAISE EXCEPTION '{LOST}'")),
            "{text}"
        );
        assert!(text.contains("E'it''s'"), "{text}");
        assert!(text.contains("AND version = 7;"), "{text}");
        assert!(text.contains(&format!("'{CONFLICT}1'")), "{text}");
    }
}
