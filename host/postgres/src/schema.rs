//! wardlock's own objects in the database, in one schema (default
//! `wardlock`): the fencing-token sequence, the server-start epoch and the
//! guarded store's table. Locks themselves are advisory locks and need no
//! object.
//!
//! Fencing tokens come from one sequence, drawn in the statement that takes
//! the lock (after it is granted), so they rise across every grant of every
//! lock and every host, and cost no write of their own: PostgreSQL logs a
//! sequence 32 values ahead. After a crash the sequence resumes from its last
//! logged value, which could hand out again a value given out just before
//! the crash; so the first connection after every server start moves the
//! sequence 2^20 ahead (`bump_epoch`), once per start (`pg_postmaster_start_time()`
//! recorded in the `epoch` table, updated under its row lock).

use tokio_postgres::Client;

use wardlock_backend::BackendError;

use crate::errors::classify;

/// How far the token sequence jumps after a server start.
const EPOCH_JUMP: i64 = 1 << 20;

/// wardlock's schema (a validated plain identifier).
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    name: String,
}

impl Schema {
    pub(crate) fn new(name: &str) -> Self {
        Schema {
            name: name.to_owned(),
        }
    }

    /// `"schema".token`, for `nextval('…')`.
    pub(crate) fn token_sequence(&self) -> String {
        format!("\"{}\".token", self.name)
    }

    /// `"schema".revision`, the guarded store's revisions.
    pub(crate) fn revision_sequence(&self) -> String {
        format!("\"{}\".revision", self.name)
    }

    /// `"schema".data`, the guarded store's table.
    pub(crate) fn data_table(&self) -> String {
        format!("\"{}\".data", self.name)
    }

    /// Creates what is missing (once, under a transaction-scoped advisory
    /// lock, so hosts starting together do not race), then checks that this
    /// role may use all of it.
    ///
    /// # Errors
    /// `Refused` naming what the role lacks and the statement that grants it.
    ///
    /// # Cancellation safety
    /// Cancel safe: the transaction is rolled back if dropped.
    pub(crate) async fn set_up(&self, client: &mut Client) -> Result<(), BackendError> {
        let schema = &self.name;
        // The catalog, not to_regclass: naming an object in a schema this
        // role may not use is an error, and the rights are checked below.
        let found: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relname IN ('token', 'revision', 'epoch', 'data')",
                &[&schema],
            )
            .await
            .map_err(|e| classify(&e, "look for wardlock's schema"))?
            .get(0);
        let exists = found == 4;
        if !exists {
            let create = format!(
                "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
                 CREATE SEQUENCE IF NOT EXISTS \"{schema}\".token;
                 CREATE SEQUENCE IF NOT EXISTS \"{schema}\".revision;
                 CREATE TABLE IF NOT EXISTS \"{schema}\".epoch (id boolean PRIMARY KEY DEFAULT true CHECK (id), started timestamptz);
                 INSERT INTO \"{schema}\".epoch (id, started) VALUES (true, NULL) ON CONFLICT DO NOTHING;
                 CREATE TABLE IF NOT EXISTS \"{schema}\".data (lock text NOT NULL, key text NOT NULL, value bytea NOT NULL, token bigint NOT NULL, revision bigint NOT NULL, PRIMARY KEY (lock, key));"
            );
            let transaction = client
                .transaction()
                .await
                .map_err(|e| classify(&e, "begin a transaction"))?;
            transaction
                .execute(
                    "SELECT pg_advisory_xact_lock($1)",
                    &[&crate::key::key_of("wardlock schema setup")],
                )
                .await
                .map_err(|e| classify(&e, "serialise the schema setup"))?;
            transaction.batch_execute(&create).await.map_err(|e| {
                let refused = classify(&e, &format!("create the schema \"{schema}\""));
                match refused {
                    BackendError::Refused(why) => BackendError::Refused(format!(
                        "{why}. wardlock keeps its fencing-token sequence and guarded store in the schema \"{schema}\": have an administrator run `CREATE SCHEMA \"{schema}\" AUTHORIZATION <this role>` (wardlock creates the rest), or choose a schema this role owns with --postgres-schema"
                    )),
                    other => other,
                }
            })?;
            transaction
                .commit()
                .await
                .map_err(|e| classify(&e, "commit the schema setup"))?;
        }
        self.check_rights(client).await
    }

    /// Refuses a role that cannot draw tokens or use the guarded store.
    /// By object ids from the catalog: naming an object in a schema the role
    /// may not use would be an error of its own, not the answer.
    async fn check_rights(&self, client: &Client) -> Result<(), BackendError> {
        let schema = &self.name;
        let rows = client
            .query(
                "SELECT c.relname::text, has_schema_privilege(n.oid, 'USAGE'), \
                        CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(c.oid, 'USAGE') \
                             WHEN c.relname = 'epoch' THEN has_table_privilege(c.oid, 'SELECT, UPDATE') \
                             ELSE has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE') END, \
                        current_user::text \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relname IN ('token', 'revision', 'epoch', 'data') \
                 ORDER BY c.relname",
                &[&schema],
            )
            .await
            .map_err(|e| classify(&e, "check this role's rights"))?;
        let Some(first) = rows.first() else {
            return Err(BackendError::Refused(format!(
                "wardlock's objects in the schema \"{schema}\" are missing"
            )));
        };
        let role: String = first.get(3);
        let mut lacks = Vec::new();
        if !first.get::<_, bool>(1) {
            lacks.push(format!("USAGE ON SCHEMA \"{schema}\""));
        }
        for row in &rows {
            if row.get::<_, bool>(2) {
                continue;
            }
            let object: String = row.get(0);
            lacks.push(match object.as_str() {
                "token" | "revision" => format!("USAGE ON SEQUENCE \"{schema}\".{object}"),
                "epoch" => format!("SELECT, UPDATE ON \"{schema}\".epoch"),
                _ => format!("SELECT, INSERT, UPDATE, DELETE ON \"{schema}\".{object}"),
            });
        }
        if lacks.is_empty() {
            return Ok(());
        }
        let grants: Vec<String> = lacks
            .iter()
            .map(|what| format!("GRANT {what} TO \"{role}\";"))
            .collect();
        Err(BackendError::Refused(format!(
            "the PostgreSQL role \"{role}\" lacks rights wardlock needs ({}): have an administrator run {}",
            lacks.join("; "),
            grants.join(" ")
        )))
    }

    /// Moves the token sequence ahead once after every server start (see
    /// the module doc). Every connection runs it before taking a lock.
    ///
    /// # Errors
    /// What the server reports.
    ///
    /// # Cancellation safety
    /// Cancel safe: one statement, committed or not.
    pub(crate) async fn bump_epoch(&self, client: &Client) -> Result<(), BackendError> {
        let schema = &self.name;
        let statement = format!(
            "WITH moved AS (UPDATE \"{schema}\".epoch SET started = pg_postmaster_start_time() \
                 WHERE started IS DISTINCT FROM pg_postmaster_start_time() RETURNING 1) \
             SELECT setval('{token}', nextval('{token}') + {EPOCH_JUMP}) FROM moved",
            token = self.token_sequence()
        );
        client
            .query(&statement, &[])
            .await
            .map_err(|e| classify(&e, "move the token sequence past a server restart"))?;
        Ok(())
    }
}
