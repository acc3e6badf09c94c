//! Who holds and waits for a lock, as the server sees it: `pg_locks` rows of
//! the lock's advisory key, joined with `pg_stat_activity` for who each
//! backend is (its role, application name and client address).

use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Contender, Mode};

use crate::Shared;
use crate::errors::classify;
use crate::key::{advisory_key, pg_locks_ids};

/// The contenders of `name` in queue order: holders first, then waiters by
/// when they started waiting (`pg_locks.waitstart`).
///
/// # Errors
/// `Unavailable` when the server cannot be reached.
///
/// # Cancellation safety
/// Cancel safe: a read.
pub(crate) async fn contenders(
    shared: &Shared,
    name: &LockName,
) -> Result<Vec<Contender>, BackendError> {
    let main = shared.pool.main().await?;
    let (classid, objid) = pg_locks_ids(advisory_key(name));
    let rows = main
        .client
        .query(
            "SELECT l.pid, l.mode, l.granted, coalesce(a.usename::text, ''), \
                    coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'local') \
             FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.classid::bigint = $1 AND l.objid::bigint = $2 \
               AND l.objsubid = 1 \
             ORDER BY l.granted DESC, l.waitstart NULLS FIRST, l.pid",
            &[&i64::from(classid), &i64::from(objid)],
        )
        .await
        .map_err(|e| classify(&e, "read pg_locks"))?;
    Ok(rows
        .iter()
        .map(|row| {
            let pid: i32 = row.get(0);
            let mode: String = row.get(1);
            let role: String = row.get(3);
            let application: String = row.get(4);
            let client: String = row.get(5);
            Contender {
                owner: format!("{application} ({role}@{client}, pid {pid})"),
                mode: if mode == "ExclusiveLock" {
                    Mode::Exclusive
                } else {
                    Mode::Shared
                },
                holds: row.get(2),
                token: None,
                node: Some(format!("backend {pid}")),
            }
        })
        .collect())
}
