//! A real PgBouncer (Debian's `pgbouncer` package) in front of a [`PgServer`].

use std::path::Path;
use std::process::{Child, Command};
use std::time::Instant;

use super::process::{self, as_server_user, give, log_file};
use super::{PgServer, START_LIMIT, is_ready, private_copy, psql_at};
use crate::ports::free_port;

/// A PgBouncer this test started, and only it stops: SIGKILL by PID when
/// dropped.
///
/// It listens on a free loopback port (TCP only) and offers one database,
/// `wardlock`, which it serves from the server's database `wardlock` as the
/// role `wardlock` (with the server's password, over TLS with the client
/// certificate of `wardlock` if the server has TLS), whatever user the client
/// names (`auth_type = any`: no client authentication). Pools of up to 100
/// server connections, 500 clients; `server_login_retry = 1` (not 15 s), so
/// it reconnects soon after a server restart; `extra_float_digits` and
/// `options` in a client's startup packet are ignored, as clients commonly
/// send them.
pub struct PgBouncer {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

impl PgBouncer {
    /// Starts PgBouncer in `pool_mode` (`session`, `transaction` or
    /// `statement`) before `server` and waits until it accepts connections
    /// (`pg_isready`, at most 60 s).
    ///
    /// # Panics
    /// When PgBouncer is not installed (naming the install command), the pool
    /// mode is none of those, or it does not start in time (with its log).
    pub fn start(server: &PgServer, pool_mode: &str) -> PgBouncer {
        assert!(
            matches!(pool_mode, "session" | "transaction" | "statement"),
            "a PgBouncer pool mode, not {pool_mode:?}"
        );
        assert!(
            Path::new(process::PGBOUNCER).exists(),
            "{}",
            process::INSTALL_HINT
        );
        let dir = tempfile::Builder::new()
            .prefix("wardlock-pgbouncer-")
            .tempdir_in("/tmp")
            .expect("temp dir");
        give(dir.path());
        let mut target = format!(
            "host=127.0.0.1 port={} dbname=wardlock user=wardlock",
            server.port()
        );
        if let Some(password) = server.password() {
            assert!(
                !password.contains(['\'', '\\', ' ']),
                "a password PgBouncer's connection string takes as it is, not {password:?}"
            );
            target.push_str(&format!(" password={password}"));
        }
        let mut tls = String::new();
        if let Some(pki) = server.pki.as_deref() {
            let (cert, key) = pki.client_for("wardlock");
            let ca = private_copy(&pki.ca(), dir.path(), "ca.pem");
            let cert = private_copy(&cert, dir.path(), "client.pem");
            let key = private_copy(&key, dir.path(), "client-key.pem");
            tls = format!(
                "server_tls_sslmode = verify-full\nserver_tls_ca_file = {}\nserver_tls_cert_file = {}\nserver_tls_key_file = {}\n",
                ca.display(),
                cert.display(),
                key.display()
            );
        }
        let port = free_port();
        let config = format!(
            "[databases]\n\
             wardlock = {target}\n\
             \n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             unix_socket_dir =\n\
             auth_type = any\n\
             pool_mode = {pool_mode}\n\
             max_client_conn = 500\n\
             default_pool_size = 100\n\
             server_login_retry = 1\n\
             ignore_startup_parameters = extra_float_digits,options\n\
             {tls}"
        );
        let ini = dir.path().join("pgbouncer.ini");
        std::fs::write(&ini, config).expect("write pgbouncer.ini");
        give(&ini);
        let (stdout, stderr) = log_file(&dir.path().join("pgbouncer.log"));
        let child = as_server_user(Path::new(process::PGBOUNCER), dir.path())
            .arg(&ini)
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("start pgbouncer");
        let mut bouncer = PgBouncer {
            child: Some(child),
            port,
            dir,
        };
        let started = Instant::now();
        while !is_ready(port, "wardlock") {
            if let Some(child) = bouncer.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                bouncer.child = None;
                panic!("pgbouncer exited with {status}:\n{}", bouncer.log());
            }
            assert!(
                started.elapsed() < START_LIMIT,
                "pgbouncer did not accept connections within {START_LIMIT:?}:\n{}",
                bouncer.log()
            );
            // Readiness of a foreign process: nothing to await but its port.
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        bouncer
    }

    /// `postgres://wardlock@127.0.0.1:PORT/wardlock` (no password: the
    /// bouncer asks none).
    pub fn url(&self) -> String {
        format!("postgres://wardlock@127.0.0.1:{}/wardlock", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Runs `sql` through the bouncer with `psql`, as
    /// [`PgServer::try_psql`] does (as the role `wardlock`).
    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        psql_at(&self.url(), sql)
    }

    /// [`PgBouncer::try_psql`].
    ///
    /// # Panics
    /// When psql fails, with its stderr.
    pub fn psql(&self, sql: &str) -> String {
        self.try_psql(sql)
            .unwrap_or_else(|stderr| panic!("psql through pgbouncer failed: {stderr}\nSQL: {sql}"))
    }

    /// A `psql` command connected through the bouncer, for a session to
    /// spawn and keep.
    pub fn psql_command(&self) -> Command {
        let mut command = super::psql_base();
        command.args(["--dbname", &self.url()]);
        command
    }

    /// Kills PgBouncer (SIGKILL, by PID): its clients' connections drop.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// What PgBouncer has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        self.kill();
    }
}
