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
use crate::ports::free_port;

pub mod secure;

const ETCD: &str = "/usr/bin/etcd";
const ETCDCTL: &str = "/usr/bin/etcdctl";
const INSTALL_HINT: &str = "etcd is not installed: run `apt-get install -y etcd-server etcd-client` (Debian), or `.ci/run`";

/// One etcd member process this test started, and only it stops.
struct Member {
    name: String,
    child: Option<Child>,
    client_port: u16,
    peer_port: u16,
    /// A TLS client listener beside the plaintext one, and the flags that
    /// configure it (`secure::start_secure`).
    secure_port: Option<u16>,
    tls_args: Vec<String>,
}

impl Member {
    fn new(index: usize) -> Member {
        Member {
            name: format!("m{}", index + 1),
            child: None,
            client_port: free_port(),
            peer_port: free_port(),
            secure_port: None,
            tls_args: Vec::new(),
        }
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// Starts the member (data under `dir/<name>`) of the cluster `initial`.
    fn launch(&mut self, dir: &Path, initial: &str) {
        let log_path = dir.join(format!("{}.log", self.name));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("log file");
        let mut client = format!("http://127.0.0.1:{}", self.client_port);
        if let Some(port) = self.secure_port {
            client.push_str(&format!(",https://127.0.0.1:{port}"));
        }
        let peer = self.peer_url();
        let child = Command::new(ETCD)
            .args(["--name", &self.name, "--data-dir"])
            .arg(dir.join(&self.name))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", initial])
            .args(["--initial-cluster-token", "wardlock-test"])
            // Short elections: a cluster without its leader elects another fast.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(&self.tls_args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }
}

/// Real etcd servers this test started (one member, or a cluster of three),
/// and only it stops.
pub struct EtcdServer {
    members: Vec<Member>,
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
        EtcdServer::cluster(1)
    }

    /// Starts a cluster of `size` members on loopback and waits until each
    /// reports itself healthy.
    ///
    /// # Panics
    /// As [`EtcdServer::start`].
    pub fn cluster(size: usize) -> EtcdServer {
        assert!(Path::new(ETCD).exists(), "{INSTALL_HINT}");
        let mut server = EtcdServer {
            members: (0..size).map(Member::new).collect(),
            dir: tempfile::tempdir().expect("temp dir"),
        };
        for i in 0..size {
            server.launch(i);
        }
        for i in 0..size {
            server.wait_healthy(i);
        }
        server
    }

    fn initial_cluster(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn launch(&mut self, i: usize) {
        let initial = self.initial_cluster();
        let dir = self.dir.path().to_owned();
        self.members[i].launch(&dir, &initial);
    }

    fn wait_healthy(&mut self, i: usize) {
        let started = Instant::now();
        while !healthy(self.members[i].client_port) {
            if let Some(status) = self.members[i].exited() {
                panic!(
                    "etcd {} exited with {status}: {}",
                    self.members[i].name,
                    self.log(i)
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "etcd {} did not start within 60 s: {}",
                self.members[i].name,
                self.log(i)
            );
            // Readiness of a foreign process: nothing to await but its port.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `127.0.0.1:PORT[,...]`: every member's client listener.
    pub fn address(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Stops every member (kills the processes this test started, by PID).
    pub fn stop(&mut self) {
        for member in &mut self.members {
            member.stop();
        }
    }

    /// Starts the stopped server again on the same ports and data.
    pub fn restart(&mut self) {
        self.stop();
        for i in 0..self.members.len() {
            self.launch(i);
        }
        for i in 0..self.members.len() {
            self.wait_healthy(i);
        }
    }

    /// Kills member `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        self.members[i].stop();
    }

    /// Starts member `i` again on its data and waits until it is healthy.
    pub fn restart_member(&mut self, i: usize) {
        self.members[i].stop();
        self.launch(i);
        self.wait_healthy(i);
    }

    /// The index of the member that leads now, if the running members agree
    /// on one (`etcdctl endpoint status`).
    pub async fn leader(&self) -> Option<usize> {
        let output = self
            .etcdctl()
            .args(["endpoint", "status", "-w", "json"])
            .output()
            .await
            .ok()?;
        let statuses: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
        let statuses = statuses.as_array()?;
        let leader = statuses
            .iter()
            .find_map(|s| s["Status"]["leader"].as_u64())?;
        let endpoint = statuses
            .iter()
            .find(|s| s["Status"]["header"]["member_id"].as_u64() == Some(leader))?["Endpoint"]
            .as_str()?
            .to_owned();
        self.members
            .iter()
            .position(|m| endpoint.ends_with(&format!(":{}", m.client_port)))
    }

    fn log(&self, i: usize) -> String {
        let path = self
            .dir
            .path()
            .join(format!("{}.log", self.members[i].name));
        std::fs::read_to_string(path).unwrap_or_default()
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

    /// Dumps the keys under `prefix`, for the message of a check that ran
    /// out of time ([`crate::conformance::Subject::server_state`]): a
    /// closure that owns what it needs.
    pub fn key_dump(
        &self,
        prefix: &str,
    ) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = String> + Send>> + Send + Sync + 'static
    {
        let (address, prefix) = (self.address(), prefix.to_owned());
        move || {
            let mut command = tokio::process::Command::new("etcdctl");
            command
                .env("ETCDCTL_API", "3")
                .arg(format!("--endpoints={address}"))
                .args(["get", "--prefix", "--keys-only", &prefix]);
            let prefix = prefix.clone();
            Box::pin(async move {
                match command.output().await {
                    Ok(out) if out.status.success() => {
                        format!(
                            "etcd keys under {prefix}:\n{}",
                            String::from_utf8_lossy(&out.stdout).trim()
                        )
                    }
                    Ok(out) => format!(
                        "etcdctl get failed: {}",
                        String::from_utf8_lossy(&out.stderr)
                    ),
                    Err(error) => format!("etcdctl did not run: {error}"),
                }
            })
        }
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
    process: Etcdctl,
}

/// An etcdctl process this test spawned (killed when dropped) and the lines
/// it prints.
struct Etcdctl {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Etcdctl {
    /// Starts `etcdctl args...` against `server`, its stdout piped.
    fn spawn(server: &EtcdServer, args: &[&str]) -> Etcdctl {
        let mut child = server
            .etcdctl()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start etcdctl {args:?}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        Etcdctl {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// Stops it with SIGINT, as a user's Ctrl-C (etcdctl lets go of what it
    /// holds first), and waits for it to exit (bounded).
    async fn interrupt(mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: the PID of the child this test spawned and still owns.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGINT);
            }
        }
        let _ = tokio::time::timeout(TEST_WAIT_LIMIT, self.child.wait()).await;
    }
}

impl EtcdctlLock {
    /// Starts `etcdctl lock name` against `server` (it may wait for the lock).
    pub fn spawn(server: &EtcdServer, name: &str) -> EtcdctlLock {
        EtcdctlLock {
            process: Etcdctl::spawn(server, &["lock", name]),
        }
    }

    /// Waits until etcdctl holds the lock; returns the key it printed.
    pub async fn held(&mut self) -> String {
        tokio::time::timeout(TEST_WAIT_LIMIT, self.process.lines.next_line())
            .await
            .expect("etcdctl got the lock in time")
            .expect("read etcdctl")
            .expect("etcdctl printed its key")
    }

    /// Whether etcdctl reports holding the lock within `within`.
    pub async fn holds_within(&mut self, within: Duration) -> bool {
        matches!(
            tokio::time::timeout(within, self.process.lines.next_line()).await,
            Ok(Ok(Some(_)))
        )
    }

    /// Stops etcdctl (SIGINT, as a user's Ctrl-C: it releases the lock).
    pub async fn release(self) {
        self.process.interrupt().await;
    }
}

/// An `etcdctl elect` process: a candidate (`etcdctl elect NAME PROPOSAL`,
/// which prints its key and value once elected and resigns on SIGINT) or an
/// observer (`etcdctl elect -l NAME`, which prints the leader's key and value
/// each time either changes).
pub struct EtcdctlElect {
    process: Etcdctl,
}

impl EtcdctlElect {
    /// Starts `etcdctl elect name proposal` against `server` (it may wait).
    pub fn campaign(server: &EtcdServer, name: &str, proposal: &str) -> EtcdctlElect {
        EtcdctlElect::spawn(server, &[name, proposal])
    }

    /// Starts `etcdctl elect -l name` against `server`.
    pub fn observe(server: &EtcdServer, name: &str) -> EtcdctlElect {
        EtcdctlElect::spawn(server, &["-l", name])
    }

    fn spawn(server: &EtcdServer, args: &[&str]) -> EtcdctlElect {
        let args: Vec<&str> = std::iter::once("elect")
            .chain(args.iter().copied())
            .collect();
        EtcdctlElect {
            process: Etcdctl::spawn(server, &args),
        }
    }

    /// The next key and value etcdctl prints (a candidate: once elected; an
    /// observer: the leader, at start and on each change), within the
    /// test's limit.
    ///
    /// # Panics
    /// When nothing is printed in time, or etcdctl exits.
    pub async fn next(&mut self) -> (String, String) {
        let mut line = async || {
            tokio::time::timeout(TEST_WAIT_LIMIT, self.process.lines.next_line())
                .await
                .expect("etcdctl elect printed in time")
                .expect("read etcdctl elect")
                .expect("etcdctl elect printed a line")
        };
        let key = line().await;
        let value = line().await;
        (key, value)
    }

    /// Whether etcdctl printed nothing since the last [`EtcdctlElect::next`]
    /// (without waiting: only what already arrived counts).
    pub fn printed_nothing(&mut self) -> bool {
        use std::future::Future;
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        let next = std::pin::pin!(self.process.lines.next_line());
        next.poll(&mut context).is_pending()
    }

    /// Stops etcdctl with SIGINT, as a user's Ctrl-C: a candidate resigns
    /// (deletes its key) before it exits.
    pub async fn interrupt(self) {
        self.process.interrupt().await;
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
