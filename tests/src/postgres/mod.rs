//! A real PostgreSQL server per test (Debian's `postgresql` package, the
//! newest version under `/usr/lib/postgresql`), made by `initdb` in a temp
//! dir under `/tmp` and listening on a free loopback port, stopped by `Drop`
//! even when the test fails; and real PgBouncer poolers in front of one
//! ([`PgBouncer`]). Driven with `psql` only: no Rust PostgreSQL client.
//!
//! Both programs refuse to run as root: as root the harness runs them as the
//! `postgres` account (std's `CommandExt::uid`/`gid`) and gives it the temp
//! dirs; otherwise as this process's user. No system service is involved.
//! Every process started here is stopped by PID, by its handle.
//!
//! A server has a superuser role `wardlock` and a database `wardlock`
//! ([`PgServer::url`]) besides initdb's superuser `postgres`, which
//! [`PgServer::psql`] uses over the server's Unix socket (in its temp dir,
//! `trust`ed whatever [`PgOptions`] ask of TCP clients).

mod bouncer;
mod process;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use self::bouncer::PgBouncer;
use self::process::{as_server_user, give, log_file, pg_bin, without_pg_env};
use crate::pki::TestPki;
use crate::ports::free_port;

/// How long a server may take to start (or recover from a crash) and to
/// stop before it is killed.
const START_LIMIT: Duration = Duration::from_secs(60);
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// What a [`PgServer`] asks of its TCP clients. The default: plaintext and
/// `trust` (any role, no password).
#[derive(Clone, Default)]
pub struct PgOptions {
    /// TLS with the test PKI's server certificate; `None`: plaintext only.
    pub tls: Option<TlsOptions>,
    /// The password of the role `wardlock`; with it TCP clients authenticate
    /// with `scram-sha-256` (`password_encryption = scram-sha-256`).
    /// [`PgServer::psql`] still works: it uses the Unix socket.
    pub password: Option<String>,
}

/// A TLS server: `ssl = on` with [`TestPki::server`]'s certificate (for
/// `127.0.0.1` and `localhost`) and `ssl_ca_file` = [`TestPki::ca`].
///
/// TCP clients must use TLS (`hostssl` lines only) unless
/// [`TlsOptions::allow_plaintext`]; they authenticate by:
///
/// | `client_cert` | [`PgOptions::password`] | `pg_hba.conf` method |
/// |---|---|---|
/// | false | None | `trust` |
/// | false | Some | `scram-sha-256` |
/// | true | None | `cert` (the certificate's CN is the role: [`TestPki::client_for`]) |
/// | true | Some | `scram-sha-256 clientcert=verify-full` (both) |
#[derive(Clone, Default)]
pub struct TlsOptions {
    /// The certificates to use; `None`: new ones ([`PgServer::pki`] has them).
    pub pki: Option<Arc<TestPki>>,
    /// Whether a client certificate signed by the CA, with the role as its
    /// CN, is required.
    pub client_cert: bool,
    /// Whether plaintext TCP connections are accepted too (`hostnossl`
    /// lines, authenticated as without TLS).
    pub allow_plaintext: bool,
}

/// A row of `pg_locks` for an advisory lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvisoryLock {
    /// The key: `classid` (high 32 bits) and `objid` (low 32 bits). For a
    /// single `bigint` key (`objsubid` 1) that is the key itself; for a pair
    /// of `int4` keys ([`AdvisoryLock::int4_pair`]) it is `key1 << 32 | key2`.
    pub key: i64,
    /// Whether the lock was taken with two `int4` keys (`objsubid` 2).
    pub int4_pair: bool,
    /// `ExclusiveLock` or `ShareLock`.
    pub mode: String,
    /// Held (true) or waited for (false).
    pub granted: bool,
    /// The backend holding or awaiting it; `None` for a prepared transaction.
    pub pid: Option<i32>,
    /// The database it belongs to (advisory keys are per database).
    pub database: String,
}

/// A PostgreSQL server this test started, and only it stops: a fast
/// shutdown when dropped, then SIGKILL (by PID) if it has not exited in 10 s.
pub struct PgServer {
    postmaster: Option<Child>,
    port: u16,
    password: Option<String>,
    pki: Option<Arc<TestPki>>,
    dir: tempfile::TempDir,
}

impl PgServer {
    /// [`PgServer::start_with`] the default options: plaintext, `trust`.
    ///
    /// # Panics
    /// As [`PgServer::start_with`].
    pub fn start() -> PgServer {
        PgServer::start_with(PgOptions::default())
    }

    /// Makes a cluster (`initdb`, superuser `postgres`) in a new temp dir,
    /// configured by `options`, starts it on a free loopback port, waits until
    /// `pg_isready`, and creates the superuser role `wardlock` (with
    /// [`PgOptions::password`]) and the database `wardlock` it owns.
    ///
    /// The server: `fsync = on`, `max_connections = 300`, `shared_buffers =
    /// 16MB`, TCP on `127.0.0.1` only, its Unix socket in its temp dir, its
    /// log (stderr) in `server.log` there ([`PgServer::log`]). `initdb` runs
    /// with `--no-sync` (its files outlive a process crash, which is all a test
    /// makes; not a machine's).
    ///
    /// # Panics
    /// When PostgreSQL is not installed (naming the install command), `initdb`
    /// fails, or the server does not accept connections within 60 s (with
    /// its log).
    pub fn start_with(options: PgOptions) -> PgServer {
        assert!(pg_bin("postgres").exists(), "{}", process::INSTALL_HINT);
        // Under /tmp, whatever TMPDIR says: the `postgres` account must reach it.
        let dir = tempfile::Builder::new()
            .prefix("wardlock-pg-")
            .tempdir_in("/tmp")
            .expect("temp dir");
        give(dir.path());
        let data = dir.path().join("data");
        let init = as_server_user(&pg_bin("initdb"), dir.path())
            .arg("--pgdata")
            .arg(&data)
            .args(["--username=postgres", "--auth=trust", "--encoding=UTF8"])
            .args(["--locale=C", "--no-sync", "--no-instructions"])
            .output()
            .expect("run initdb");
        assert!(
            init.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&init.stdout),
            String::from_utf8_lossy(&init.stderr)
        );

        let pki = options
            .tls
            .as_ref()
            .map(|tls| tls.pki.clone().unwrap_or_else(|| Arc::new(TestPki::new())));
        let port = free_port();
        let mut config = format!(
            "\n# wardlock test harness\n\
             listen_addresses = '127.0.0.1'\n\
             port = {port}\n\
             unix_socket_directories = '{socket}'\n\
             max_connections = 300\n\
             shared_buffers = 16MB\n\
             huge_pages = off\n\
             fsync = on\n\
             synchronous_commit = on\n\
             logging_collector = off\n\
             log_destination = 'stderr'\n\
             log_line_prefix = '%m [%p] %q%u@%d '\n\
             password_encryption = 'scram-sha-256'\n",
            socket = dir.path().display(),
        );
        if let Some(pki) = &pki {
            let (cert, key) = pki.server();
            let cert = private_copy(&cert, dir.path(), "server.pem");
            let key = private_copy(&key, dir.path(), "server-key.pem");
            let ca = private_copy(&pki.ca(), dir.path(), "ca.pem");
            config.push_str(&format!(
                "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\nssl_ca_file = '{}'\n",
                cert.display(),
                key.display(),
                ca.display()
            ));
        }
        std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .and_then(|mut file| file.write_all(config.as_bytes()))
            .expect("append to postgresql.conf");
        std::fs::write(data.join("pg_hba.conf"), hba(&options)).expect("write pg_hba.conf");

        let mut server = PgServer {
            postmaster: None,
            port,
            password: options.password.clone(),
            pki,
            dir,
        };
        server.launch();
        let password = match &options.password {
            Some(password) => format!(" PASSWORD {}", literal(password)),
            None => String::new(),
        };
        server.psql_in(
            "postgres",
            &format!(
                "CREATE ROLE wardlock SUPERUSER LOGIN{password};\n\
                 CREATE DATABASE wardlock OWNER wardlock;"
            ),
        );
        server
    }

    /// `postgres://wardlock@127.0.0.1:PORT/wardlock`: the superuser role
    /// `wardlock` and its database (no password in it: see
    /// [`PgServer::url_with_password`]).
    pub fn url(&self) -> String {
        format!("postgres://wardlock@127.0.0.1:{}/wardlock", self.port)
    }

    /// [`PgServer::url`] with [`PgOptions::password`] in it, if there is one.
    pub fn url_with_password(&self) -> String {
        match &self.password {
            Some(password) => format!(
                "postgres://wardlock:{}@127.0.0.1:{}/wardlock",
                percent_encode(password),
                self.port
            ),
            None => self.url(),
        }
    }

    /// [`PgServer::url`] with libpq's TLS parameters: `sslmode=verify-full`,
    /// the CA, and [`TestPki::client_for`]`("wardlock")` as client
    /// certificate (for `psql`; Rust clients may not read these).
    ///
    /// # Panics
    /// When the server has no TLS.
    pub fn tls_url(&self) -> String {
        let pki = self.pki();
        let (cert, key) = pki.client_for("wardlock");
        format!(
            "{}?sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
            self.url(),
            pki.ca().display(),
            cert.display(),
            key.display()
        )
    }

    /// The certificates of a TLS server.
    ///
    /// # Panics
    /// When the server has no TLS.
    pub fn pki(&self) -> &TestPki {
        self.pki.as_deref().expect("a server started with TLS")
    }

    /// The password of the role `wardlock`, if the server has one.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Runs `sql` with `psql` as the superuser `postgres` in the database
    /// `wardlock` (over the Unix socket, `-X -w -A -t -q`, `ON_ERROR_STOP=1`,
    /// the statements on stdin, so each runs and prints in turn): its output,
    /// trimmed (rows one a line, columns separated by `|`).
    ///
    /// # Panics
    /// When psql fails, with its stderr.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_in("wardlock", sql)
    }

    /// [`PgServer::psql`], its failure as psql's stderr.
    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        run_psql(self.psql_command_in("wardlock"), sql)
    }

    /// A `psql` command connected as [`PgServer::psql`] is, with its options,
    /// for a session to spawn and keep (SQL from `-c` or stdin).
    pub fn psql_command(&self) -> Command {
        self.psql_command_in("wardlock")
    }

    fn psql_command_in(&self, database: &str) -> Command {
        let mut command = psql_base();
        command
            .arg("--host")
            .arg(self.dir.path())
            .args(["--port", &self.port.to_string()])
            .args(["--username", "postgres", "--dbname", database]);
        command
    }

    fn psql_in(&self, database: &str, sql: &str) -> String {
        run_psql(self.psql_command_in(database), sql)
            .unwrap_or_else(|stderr| panic!("psql failed: {stderr}\nSQL: {sql}"))
    }

    /// Creates a role that may log in (with `password`, if any) and nothing
    /// more: not a superuser, no `CREATE` on `public`, owner of nothing.
    ///
    /// # Panics
    /// When the role cannot be created (it exists already, …).
    pub fn create_role(&self, name: &str, password: Option<&str>) {
        let password = match password {
            Some(password) => format!(" PASSWORD {}", literal(password)),
            None => String::new(),
        };
        self.psql(&format!(
            "CREATE ROLE {} LOGIN{password};",
            identifier(name)
        ));
    }

    /// Stops the server (fast shutdown) and starts it again on the same port
    /// and data, waiting until it accepts connections (after [`PgServer::kill`]:
    /// once crash recovery is done).
    ///
    /// # Panics
    /// As [`PgServer::start_with`].
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// Fast shutdown: SIGINT to the postmaster (sessions are ended, their
    /// transactions rolled back, a checkpoint written), and waits for it to
    /// exit; after 10 s it and its processes are killed as by
    /// [`PgServer::kill`].
    pub fn stop(&mut self) {
        if let Some(mut postmaster) = self.postmaster.take() {
            process::signal(&postmaster, libc::SIGINT);
            if process::wait_exit(&mut postmaster, STOP_LIMIT).is_none() {
                process::kill_tree(postmaster);
            }
        }
    }

    /// Crashes the server: SIGKILL to the postmaster and each of its processes
    /// (backends, checkpointer, …), as a machine or container crash would:
    /// nothing is written, connections are reset. [`PgServer::restart`] then
    /// starts it with crash recovery (committed transactions survive:
    /// `fsync = on`).
    pub fn kill(&mut self) {
        if let Some(postmaster) = self.postmaster.take() {
            process::kill_tree(postmaster);
        }
    }

    /// The advisory locks held or awaited now, in every database (`pg_locks`
    /// rows with `locktype = 'advisory'`).
    pub fn advisory_locks(&self) -> Vec<AdvisoryLock> {
        let rows = self.psql(
            "SELECT l.classid, l.objid, l.objsubid, l.mode, l.granted, coalesce(l.pid, 0), coalesce(d.datname, '') \
             FROM pg_locks l LEFT JOIN pg_database d ON d.oid = l.database \
             WHERE l.locktype = 'advisory' ORDER BY l.pid, l.classid, l.objid, l.mode",
        );
        rows.lines()
            .filter(|row| !row.is_empty())
            .map(|row| {
                let columns: Vec<&str> = row.split('|').collect();
                assert_eq!(columns.len(), 7, "a pg_locks row: {row}");
                let classid: u32 = columns[0].parse().expect("classid");
                let objid: u32 = columns[1].parse().expect("objid");
                let pid: i32 = columns[5].parse().expect("pid");
                AdvisoryLock {
                    key: ((u64::from(classid) << 32) | u64::from(objid)) as i64,
                    int4_pair: columns[2] == "2",
                    mode: columns[3].to_owned(),
                    granted: columns[4] == "t",
                    pid: (pid != 0).then_some(pid),
                    database: columns[6].to_owned(),
                }
            })
            .collect()
    }

    /// Terminates (`pg_terminate_backend`) each backend holding the
    /// single-`bigint` advisory key `key`, in any database and mode, and waits
    /// (up to 10 s each) until it is gone, so the lock is free on return:
    /// how many were terminated.
    pub fn terminate_backends_holding(&self, key: i64) -> usize {
        let high = (key as u64) >> 32;
        let low = (key as u64) & 0xffff_ffff;
        let terminated = self.psql(&format!(
            "SELECT count(*) FILTER (WHERE terminated) FROM ( \
               SELECT pg_terminate_backend(pid, 10000) AS terminated FROM ( \
                 SELECT DISTINCT pid FROM pg_locks \
                 WHERE locktype = 'advisory' AND objsubid = 1 AND granted \
                   AND classid = '{high}'::oid AND objid = '{low}'::oid \
                   AND pid IS NOT NULL AND pid <> pg_backend_pid()) holders) t;"
        ));
        terminated.parse().expect("a count")
    }

    /// What the server has written to its log (stderr) so far, across
    /// restarts.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Starts the postmaster on the configured data and waits until it
    /// accepts connections.
    fn launch(&mut self) {
        let (stdout, stderr) = log_file(&self.dir.path().join("server.log"));
        let postmaster = as_server_user(&pg_bin("postgres"), self.dir.path())
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("start postgres");
        self.postmaster = Some(postmaster);
        let started = Instant::now();
        while !is_ready(self.port, "postgres") {
            if let Some(postmaster) = self.postmaster.as_mut()
                && let Ok(Some(status)) = postmaster.try_wait()
            {
                self.postmaster = None;
                panic!("postgres exited with {status}:\n{}", self.log());
            }
            assert!(
                started.elapsed() < START_LIMIT,
                "postgres did not accept connections within {START_LIMIT:?}:\n{}",
                self.log()
            );
            // Readiness of a foreign process: nothing to await but its port.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `pg_hba.conf` for `options`: the Unix socket trusted (for
/// [`PgServer::psql`]), TCP from 127.0.0.1 as the options say.
fn hba(options: &PgOptions) -> String {
    let plain = if options.password.is_some() {
        "scram-sha-256"
    } else {
        "trust"
    };
    let mut hba = String::from(
        "# wardlock test harness\n# TYPE DATABASE USER ADDRESS METHOD\nlocal all all trust\n",
    );
    match &options.tls {
        None => hba.push_str(&format!("host all all 127.0.0.1/32 {plain}\n")),
        Some(tls) => {
            let method = match (tls.client_cert, options.password.is_some()) {
                (false, _) => plain,
                (true, false) => "cert",
                (true, true) => "scram-sha-256 clientcert=verify-full",
            };
            hba.push_str(&format!("hostssl all all 127.0.0.1/32 {method}\n"));
            if tls.allow_plaintext {
                hba.push_str(&format!("hostnossl all all 127.0.0.1/32 {plain}\n"));
            }
        }
    }
    hba
}

/// Whether a server (or pooler) on `127.0.0.1:port` accepts connections
/// (`pg_isready`: a refused login still counts, a server starting or in
/// recovery does not).
fn is_ready(port: u16, database: &str) -> bool {
    let mut command = Command::new(pg_bin("pg_isready"));
    without_pg_env(&mut command);
    command
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--dbname",
            database,
            "--username",
            "postgres",
            "--timeout",
            "2",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// `psql -X -w -A -t -q -v ON_ERROR_STOP=1` (no `.psqlrc`, never a
/// password prompt) with no `PG*` variables of this environment (the
/// connection to add).
fn psql_base() -> Command {
    let mut command = Command::new(pg_bin("psql"));
    without_pg_env(&mut command);
    command.args(["-X", "-w", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"]);
    command
}

/// What the server at `url` shows of locks now, as text: `pg_locks`' advisory
/// rows and the client connections of `pg_stat_activity` (state, wait event,
/// last query). For the message of a check that ran out of time
/// ([`crate::conformance::Subject::server_state`]).
pub async fn lock_state(url: String) -> String {
    let sql = "SELECT 'lock', l.pid, l.mode, l.granted, l.classid, l.objid FROM pg_locks l \
               WHERE l.locktype = 'advisory' ORDER BY l.pid; \
               SELECT 'session', pid, state, coalesce(wait_event_type, '-'), \
               coalesce(wait_event, '-'), left(query, 120) FROM pg_stat_activity \
               WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() ORDER BY pid;";
    let dumped = tokio::task::spawn_blocking(move || psql_at(&url, sql)).await;
    match dumped {
        Ok(Ok(rows)) if rows.is_empty() => "pg_locks and pg_stat_activity: nothing".to_owned(),
        Ok(Ok(rows)) => format!(
            "pg_locks (lock|pid|mode|granted|classid|objid) and pg_stat_activity (session|pid|state|wait type|wait event|query):\n{rows}"
        ),
        Ok(Err(stderr)) => format!("psql failed: {stderr}"),
        Err(error) => format!("psql did not run: {error}"),
    }
}

/// Runs `sql` with `psql` connected by `conninfo` (a `postgres://` URL or
/// `key=value` pairs, as libpq takes them), as [`PgServer::psql`] does:
/// its trimmed output, or its stderr when it fails (a refused login, an
/// error).
pub fn psql_at(conninfo: &str, sql: &str) -> Result<String, String> {
    let mut command = psql_base();
    command.args(["--dbname", conninfo]);
    run_psql(command, sql)
}

/// Runs `command` (a psql) with `sql` on its stdin.
fn run_psql(mut command: Command, sql: &str) -> Result<String, String> {
    let mut child = command
        .args(["--file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run psql: {e}"));
    let mut stdin = child.stdin.take().expect("psql's stdin");
    let sql = sql.to_owned();
    // A writer beside the reader: psql may print before it has read it all.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(sql.as_bytes());
    });
    let output = child.wait_with_output().expect("wait for psql");
    let _ = writer.join();
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    } else {
        Err(format!(
            "{}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `name` as a quoted SQL identifier.
fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` percent-encoded for a URL's userinfo (all but unreserved characters).
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The path of a file the server user must read, given to it (copied from
/// the PKI's private dir).
fn private_copy(from: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    process::copy_private(from, &to);
    to
}
