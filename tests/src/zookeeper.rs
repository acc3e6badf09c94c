//! A real ZooKeeper server per test: Debian's `zookeeper` package, started on a
//! free loopback port in a temp dir, stopped by `Drop` even when the test fails.

pub mod ensemble;
pub mod secure;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

use crate::ports::free_port;
use crate::proxy::Proxy;

const ZK_SERVER: &str = "/usr/share/zookeeper/bin/zkServer.sh";
const INSTALL_HINT: &str =
    "ZooKeeper is not installed: run `apt-get install -y zookeeper` (Debian), or `.ci/run`";

/// A ZooKeeper server process this test started, and only it stops.
pub struct ZkServer {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    /// Extra JVM flags (a secure server's class path and JAAS file).
    jvm_flags: String,
}

impl ZkServer {
    /// Starts a server on a free loopback port and waits until it answers `ruok`.
    ///
    /// # Panics
    /// When ZooKeeper is not installed (naming the install command) or does not
    /// come up within 60 s.
    pub fn start() -> ZkServer {
        let mut server = ZkServer::reserve();
        server.launch();
        server
    }

    /// A server configured on a free loopback port but not started yet (start
    /// it with [`ZkServer::restart`]): for hosts that start before their
    /// lock service.
    ///
    /// # Panics
    /// When ZooKeeper is not installed (naming the install command).
    pub fn reserve() -> ZkServer {
        assert!(Path::new(ZK_SERVER).exists(), "{INSTALL_HINT}");
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        let config = format!(
            "tickTime=200\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\nminSessionTimeout=400\nmaxSessionTimeout=60000\n",
            data.display()
        );
        std::fs::write(dir.path().join("zoo.cfg"), config).expect("zoo.cfg");
        ZkServer {
            child: None,
            port,
            dir,
            jvm_flags: String::new(),
        }
    }

    /// Kills the server and deletes its data, so the next start is a new,
    /// empty server on the same address (sessions, nodes and zxids gone).
    pub fn wipe(&mut self) {
        self.stop();
        let data = self.dir.path().join("data");
        std::fs::remove_dir_all(&data).expect("remove the data dir");
        std::fs::create_dir_all(&data).expect("data dir");
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops the server (kills the JVM this test started, by PID).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the stopped (or reserved) server again on the same port and data
    /// (sessions survive if it is back within their timeout).
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// Sends a four-letter word (`ruok`, `wchs`, `mntr`, …) and returns the answer.
    pub fn four_letter(&self, word: &str) -> String {
        four_letter(self.port, word).unwrap_or_default()
    }

    fn launch(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("server.log")).expect("log file");
        let child = Command::new("bash")
            .arg(ZK_SERVER)
            .arg("start-foreground")
            .arg(self.config_path())
            .env("ZOO_LOG_DIR", self.dir.path())
            .env(
                "JVMFLAGS",
                format!(
                    "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dznode.container.checkIntervalMs=100 {}",
                    self.jvm_flags
                ),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start zkServer.sh");
        // zkServer.sh `exec`s java, so this PID is the JVM's.
        self.child = Some(child);
        let started = Instant::now();
        while four_letter(self.port, "ruok").as_deref() != Some("imok") {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("ZooKeeper exited with {status}: {}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "ZooKeeper did not start within 60 s: {}",
                self.log()
            );
            // Readiness of a foreign process: nothing to await but its port.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("zoo.cfg")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Attaches to the session `info` and closes it, until the server answers
/// that it is gone. A dropped client sends its close in the background, so
/// one attach is not enough: were the proxy resumed before the server handled
/// that close, the backend could take the session back for a moment (and
/// truly hold its locks) before losing it.
///
/// # Panics
/// When the session still answers after 20 closes, or on another error.
async fn close_on_the_server(info: zookeeper_client::SessionInfo, server: &ZkServer) {
    for _ in 0..20 {
        let attached = zookeeper_client::Client::connector()
            .with_session(info.clone())
            .with_session_timeout(Duration::from_secs(2))
            .connect(&server.address())
            .await;
        match attached {
            Ok(intruder) => drop(intruder),
            Err(zookeeper_client::Error::SessionExpired) => return,
            Err(other) => panic!("attaching to the session to close it: {other}"),
        }
    }
    panic!("the session still answered after 20 closes");
}

fn four_letter(port: u16, word: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.write_all(word.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// Expires `backend`'s ZooKeeper session for real and waits until the backend
/// has seen it end: with `proxy` (between the backend and `server`)
/// partitioned, so the backend cannot take the session back, another client
/// attaches to the session and closes it, until the server says it is gone.
///
/// # Panics
/// When the session does not end within [`crate::TEST_WAIT_LIMIT`].
pub async fn expire_session(backend: &ZooKeeperBackend, proxy: &Proxy, server: &ZkServer) {
    let info = backend.session_info().expect("session info");
    // Watch the old session itself: once it ends, the backend may already be on
    // a new one, whose state would never turn terminated.
    let mut old_state = backend.state_watcher().expect("connected");
    proxy.partition(true);
    close_on_the_server(info, server).await;
    proxy.partition(false);
    let ended = async {
        while !old_state.state().is_terminated() {
            old_state.changed().await;
        }
    };
    tokio::time::timeout(crate::TEST_WAIT_LIMIT, ended)
        .await
        .expect("the old session never ended");
}

/// Deletes the one node of lock queue `queue` with a plain client, behind
/// its holder's back (as an operator's delete or an expiry the host did not
/// see would): what a test of the server's own fence check needs.
///
/// # Panics
/// When the queue does not hold exactly one node, or the delete fails.
pub async fn delete_the_holder_node(client: &zookeeper_client::Client, queue: &str) {
    let (nodes, _) = client.get_children(queue).await.expect("the lock's queue");
    let [node] = nodes.as_slice() else {
        panic!("one node expected in {queue}: {nodes:?}");
    };
    client
        .delete(&format!("{queue}/{node}"), None)
        .await
        .expect("delete the holder's node behind its back");
}

/// A host on `server` keeping its locks under `root`, with host-local
/// hand-off when `handoff` (otherwise a node per guest).
///
/// # Panics
/// When the backend cannot connect.
pub async fn backend_under(server: &ZkServer, root: &str, handoff: bool) -> ZooKeeperBackend {
    let mut config = ZooKeeperConfig::new(server.address()).root(root);
    if handoff {
        config = config.local_handoff(LocalHandoff::default());
    }
    ZooKeeperBackend::connect(config).await.expect("backend")
}
