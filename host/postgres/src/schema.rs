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

    /// `"schema".kv`, the key-value store's table (`wasi:keyvalue`).
    pub(crate) fn kv_table(&self) -> String {
        format!("\"{}\".kv", self.name)
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
        let found: Vec<String> = client
            .query(
                "SELECT 'schema' FROM pg_namespace WHERE nspname = $1 \
                 UNION ALL SELECT c.relname::text FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relname IN ('token', 'revision', 'epoch', 'data', 'kv')",
                &[&schema],
            )
            .await
            .map_err(|e| classify(&e, "look for wardlock's schema"))?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let missing = self.missing_objects(&found);
        if !missing.is_empty() {
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
            transaction
                .batch_execute(&missing.join("\n"))
                .await
                .map_err(|e| {
                    let refused = classify(&e, &format!("create wardlock's objects in the schema \"{schema}\""));
                    match refused {
                        BackendError::Refused(why) => BackendError::Refused(format!(
                            "{why}. wardlock keeps its fencing-token sequence and guarded store in the schema \"{schema}\": have an administrator run `CREATE SCHEMA \"{schema}\" AUTHORIZATION <this role>` (wardlock then creates the rest in it), or choose a schema this role owns with --postgres-schema"
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

    /// The statements that create what `found` (the schema, `schema`, and
    /// the names of the objects present) lacks, in order. Only what is
    /// missing: `CREATE SCHEMA IF NOT EXISTS` needs `CREATE` on the database
    /// even when the schema exists.
    fn missing_objects(&self, found: &[String]) -> Vec<String> {
        let schema = &self.name;
        let has = |name: &str| found.iter().any(|f| f == name);
        let mut missing = Vec::new();
        if !has("schema") {
            missing.push(format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\";"));
        }
        if !has("token") {
            missing.push(format!("CREATE SEQUENCE IF NOT EXISTS \"{schema}\".token;"));
        }
        if !has("revision") {
            missing.push(format!(
                "CREATE SEQUENCE IF NOT EXISTS \"{schema}\".revision;"
            ));
        }
        if !has("epoch") {
            missing.push(format!(
                "CREATE TABLE IF NOT EXISTS \"{schema}\".epoch (id boolean PRIMARY KEY DEFAULT true CHECK (id), started timestamptz);
                 INSERT INTO \"{schema}\".epoch (id, started) VALUES (true, NULL) ON CONFLICT DO NOTHING;"
            ));
        }
        if !has("data") {
            missing.push(format!(
                "CREATE TABLE IF NOT EXISTS \"{schema}\".data (lock text NOT NULL, key text NOT NULL, value bytea NOT NULL, token bigint NOT NULL, revision bigint NOT NULL, PRIMARY KEY (lock, key));"
            ));
        }
        if !has("kv") {
            missing.push(format!(
                "CREATE TABLE IF NOT EXISTS \"{schema}\".kv (bucket text NOT NULL, key text NOT NULL, value bytea NOT NULL, version bigint NOT NULL, PRIMARY KEY (bucket, key));"
            ));
        }
        missing
    }

    /// Refuses a role that cannot draw tokens or use the guarded store.
    /// By object ids from the catalog: naming an object in a schema the role
    /// may not use would be an error of its own, not the answer.
    async fn check_rights(&self, client: &Client) -> Result<(), BackendError> {
        let schema = &self.name;
        // Each privilege on its own: `has_*_privilege` with a list answers
        // whether *any* of them is held.
        let rows = client
            .query(
                "SELECT c.relname::text, has_schema_privilege(n.oid, 'USAGE'), \
                        array_remove(ARRAY[ \
                          CASE WHEN c.relkind = 'S' AND NOT has_sequence_privilege(c.oid, 'USAGE') THEN 'USAGE' END, \
                          CASE WHEN c.relname = 'token' AND NOT has_sequence_privilege(c.oid, 'UPDATE') THEN 'UPDATE' END, \
                          CASE WHEN c.relkind <> 'S' AND NOT has_table_privilege(c.oid, 'SELECT') THEN 'SELECT' END, \
                          CASE WHEN c.relname IN ('data', 'kv') AND NOT has_table_privilege(c.oid, 'INSERT') THEN 'INSERT' END, \
                          CASE WHEN c.relkind <> 'S' AND NOT has_table_privilege(c.oid, 'UPDATE') THEN 'UPDATE' END, \
                          CASE WHEN c.relname IN ('data', 'kv') AND NOT has_table_privilege(c.oid, 'DELETE') THEN 'DELETE' END \
                        ], NULL), \
                        c.relkind = 'S', current_user::text \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relname IN ('token', 'revision', 'epoch', 'data', 'kv') \
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
        let role: String = first.get(4);
        let mut lacks = Vec::new();
        if !first.get::<_, bool>(1) {
            lacks.push(format!("USAGE ON SCHEMA \"{schema}\""));
        }
        for row in &rows {
            let missing: Vec<String> = row.get(2);
            if missing.is_empty() {
                continue;
            }
            let object: String = row.get(0);
            let kind = if row.get::<_, bool>(3) {
                "SEQUENCE "
            } else {
                ""
            };
            lacks.push(format!(
                "{} ON {kind}\"{schema}\".{object}",
                missing.join(", ")
            ));
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
        // Durable whatever the connection's `synchronous_commit`: tokens are
        // drawn from the moved sequence only after this commit is on disk,
        // so a crash cannot undo the jump under tokens already handed out.
        let statement = format!(
            "SET LOCAL synchronous_commit = on; \
             WITH moved AS (UPDATE \"{schema}\".epoch SET started = pg_postmaster_start_time() \
                 WHERE started IS DISTINCT FROM pg_postmaster_start_time() RETURNING 1) \
             SELECT setval('{token}', nextval('{token}') + {EPOCH_JUMP}) FROM moved",
            token = self.token_sequence()
        );
        client
            .simple_query(&statement)
            .await
            .map_err(|e| classify(&e, "move the token sequence past a server restart"))?;
        Ok(())
    }
}
