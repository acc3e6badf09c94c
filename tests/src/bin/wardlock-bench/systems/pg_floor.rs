//! `postgres-floor`: the least work a PostgreSQL advisory lock needs, on
//! sqlx's own `PgAdvisoryLock` (whose key wardlock's engine shares), every
//! statement awaited before the next is sent:
//!
//! - exclusive: `PgAdvisoryLock::new(NAME).acquire(conn)` (`SELECT
//!   pg_advisory_lock($1)`, which waits in the server's queue), released
//!   with `PgAdvisoryLock::force_release` (`SELECT pg_advisory_unlock($1)`:
//!   what the guard's `release_now` runs; the guard is leaked so that the
//!   connection outlives the acquire call);
//! - shared: `SELECT pg_advisory_lock_shared($1)` / `pg_advisory_unlock_shared($1)`
//!   with the same key, through `sqlx::query`.
//!
//! Each client has its own connection (as separate processes would), named
//! [`FLOOR_APPLICATION`] in `pg_stat_activity`. No fencing token, no session
//! clock, no hand-off: the server's lock manager does everything.

use std::str::FromStr;

use anyhow::{Context, bail};
use sqlx::Connection;
use sqlx::postgres::{PgAdvisoryLock, PgConnectOptions, PgConnection};
use wardlock_host::{LockName, Mode};

use super::native::Locker;

/// The `application_name` of the floor's connections.
pub(crate) const FLOOR_APPLICATION: &str = "wardlock-bench-floor";

/// One raw client: one connection.
pub(crate) struct PgFloorClient {
    conn: PgConnection,
    /// The lock of the last acquire (its key derived once per name).
    lock: Option<(LockName, PgAdvisoryLock)>,
    held: Option<Mode>,
}

impl PgFloorClient {
    /// Connects to `url`.
    ///
    /// # Errors
    /// When PostgreSQL cannot be reached.
    pub(crate) async fn connect(url: &str) -> anyhow::Result<Self> {
        let options = PgConnectOptions::from_str(url)
            .with_context(|| format!("postgres-floor: bad URL {url:?}"))?
            .application_name(FLOOR_APPLICATION);
        let conn = PgConnection::connect_with(&options)
            .await
            .with_context(|| format!("postgres-floor cannot connect to {url}"))?;
        Ok(PgFloorClient {
            conn,
            lock: None,
            held: None,
        })
    }

    /// Makes `name`'s lock the current one.
    fn select(&mut self, name: &LockName) {
        if self
            .lock
            .as_ref()
            .is_none_or(|(current, _)| current != name)
        {
            self.lock = Some((name.clone(), PgAdvisoryLock::new(name.as_str())));
        }
    }

    fn key(&self) -> anyhow::Result<i64> {
        let (_, lock) = self.lock.as_ref().context("no lock")?;
        lock.key().as_bigint().context("a single bigint key")
    }
}

impl Locker for PgFloorClient {
    async fn acquire(&mut self, lock: &LockName, mode: Mode) -> anyhow::Result<()> {
        self.select(lock);
        match mode {
            Mode::Exclusive => {
                let (_, advisory) = self.lock.as_ref().context("no lock")?;
                advisory.acquire(&mut self.conn).await?.leak();
            }
            Mode::Shared => {
                let key = self.key()?;
                sqlx::query("SELECT pg_advisory_lock_shared($1)")
                    .bind(key)
                    .execute(&mut self.conn)
                    .await?;
            }
        }
        self.held = Some(mode);
        Ok(())
    }

    async fn release(&mut self) -> anyhow::Result<()> {
        let Some(mode) = self.held.take() else {
            bail!("release without a grant");
        };
        let released = match mode {
            Mode::Exclusive => {
                let (_, advisory) = self.lock.as_ref().context("no lock")?;
                advisory.force_release(&mut self.conn).await?.1
            }
            Mode::Shared => {
                let key = self.key()?;
                sqlx::query_scalar::<_, bool>("SELECT pg_advisory_unlock_shared($1)")
                    .bind(key)
                    .fetch_one(&mut self.conn)
                    .await?
            }
        };
        if !released {
            bail!("postgres-floor: the lock was not held on its connection");
        }
        Ok(())
    }
}
