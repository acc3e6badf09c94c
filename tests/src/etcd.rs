//! A real etcd server per test: Debian's `etcd-server` package, started on
//! free loopback ports in a temp dir, stopped by `Drop` even when the test
//! fails; and `etcdctl lock` driven as another client would drive it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::TEST_WAIT_LIMIT;
use crate::serve::free_port;

const ETCD: &str = "/usr/bin/etcd";
const ETCDCTL: &str = "/usr/bin/etcdctl";
const INSTALL_HINT: &str = "etcd is not installed: run `apt-get install -y etcd-server etcd-client` (Debian), or `.ci/run`";

/// An etcd server process this test started, and only it stops.
pub struct EtcdServer {
    child: Option<Child>,
    client_port: u16,
    peer_port: u16,
    dir: tempfile::TempDir,
}

impl EtcdServer {
    /// Starts a one-member cluster on free loopback ports and waits until it
    /// reports itself healthy.
    ///
    /// # Panics
    /// When etcd is not installed (naming the install command) or does not
    /// come up within 60 s.
    pub fn start() -> EtcdServer {
        assert!(Path::new(ETCD).exists(), "{INSTALL_HINT}");
        let mut server = EtcdServer {
            child: None,
            client_port: free_port(),
            peer_port: free_port(),
            dir: tempfile::tempdir().expect("temp dir"),
        };
        server.launch();
        server
    }

    /// `127.0.0.1:PORT` of the client listener.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// Stops the server (kills the process this test started, by PID).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the stopped server again on the same ports and data.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    fn launch(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("etcd.log")).expect("log file");
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let child = Command::new(ETCD)
            .args(["--name", "m1", "--data-dir"])
            .arg(self.dir.path().join("data"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("m1={peer}")])
            // Short elections: a restarted member leads again at once.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
        let started = Instant::now();
        while !healthy(self.client_port) {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("etcd exited with {status}: {}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "etcd did not start within 60 s: {}",
                self.log()
            );
            // Readiness of a foreign process: nothing to await but its port.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// `etcdctl` against this server (API v3), with `args`.
    pub fn etcdctl(&self) -> tokio::process::Command {
        assert!(Path::new(ETCDCTL).exists(), "{INSTALL_HINT}");
        let mut command = tokio::process::Command::new(ETCDCTL);
        command
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.address()));
        command
    }

    /// The keys under `prefix` (`etcdctl get --prefix --keys-only`).
    pub async fn keys(&self, prefix: &str) -> Vec<String> {
        let output = self
            .etcdctl()
            .args(["get", "--prefix", "--keys-only", prefix])
            .output()
            .await
            .expect("run etcdctl get");
        assert!(output.status.success(), "etcdctl get: {output:?}");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Waits until exactly `len` keys are under `prefix` (bounded).
    pub async fn wait_keys(&self, prefix: &str, len: usize) {
        let started = Instant::now();
        loop {
            let keys = self.keys(prefix).await;
            if keys.len() == len {
                return;
            }
            assert!(
                started.elapsed() < TEST_WAIT_LIMIT,
                "{prefix}: keys {keys:?}, expected {len}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An `etcdctl lock NAME` process: holds the lock from the moment it prints
/// the key it created until it is stopped.
pub struct EtcdctlLock {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl EtcdctlLock {
    /// Starts `etcdctl lock name` against `server` (it may wait for the lock).
    pub fn spawn(server: &EtcdServer, name: &str) -> EtcdctlLock {
        let mut child = server
            .etcdctl()
            .args(["lock", name])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start etcdctl lock");
        let stdout = child.stdout.take().expect("stdout");
        EtcdctlLock {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// Waits until etcdctl holds the lock; returns the key it printed.
    pub async fn held(&mut self) -> String {
        tokio::time::timeout(TEST_WAIT_LIMIT, self.lines.next_line())
            .await
            .expect("etcdctl got the lock in time")
            .expect("read etcdctl")
            .expect("etcdctl printed its key")
    }

    /// Whether etcdctl reports holding the lock within `within`.
    pub async fn holds_within(&mut self, within: Duration) -> bool {
        matches!(
            tokio::time::timeout(within, self.lines.next_line()).await,
            Ok(Ok(Some(_)))
        )
    }

    /// Stops etcdctl (SIGINT, as a user's Ctrl-C: it releases the lock).
    pub async fn release(mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: the PID of the child this test spawned and still owns.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGINT);
            }
        }
        let _ = tokio::time::timeout(TEST_WAIT_LIMIT, self.child.wait()).await;
    }
}

fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}
