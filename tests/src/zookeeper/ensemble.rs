//! A 3-node ZooKeeper ensemble on loopback (one JVM per node, Debian's jars,
//! `server.N=127.0.0.1:P1:P2`, `myid`), for failover tests. Every JVM is killed by
//! PID when the ensemble is dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{ZK_SERVER, four_letter, free_port};

/// One node of the ensemble.
struct Node {
    dir: PathBuf,
    client_port: u16,
    child: Option<Child>,
}

/// Three ZooKeeper servers forming one ensemble.
pub struct Ensemble {
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

impl Ensemble {
    /// Starts three nodes and waits until one leads and two follow.
    ///
    /// # Panics
    /// When ZooKeeper is not installed or the ensemble does not form within
    /// 90 s (the message carries the log tail of each node that did not join).
    pub fn start() -> Ensemble {
        assert!(
            std::path::Path::new(ZK_SERVER).exists(),
            "ZooKeeper is not installed: run `apt-get install -y zookeeper`"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let ports: Vec<(u16, u16, u16)> = (0..3)
            .map(|_| (free_port(), free_port(), free_port()))
            .collect();
        let servers: String = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer, election))| {
                format!("server.{}=127.0.0.1:{peer}:{election}\n", i + 1)
            })
            .collect();
        let mut nodes = Vec::new();
        for (i, (client, _, _)) in ports.iter().enumerate() {
            let node_dir = dir.path().join(format!("node{}", i + 1));
            let data = node_dir.join("data");
            std::fs::create_dir_all(&data).expect("data dir");
            std::fs::write(data.join("myid"), format!("{}\n", i + 1)).expect("myid");
            let config = format!(
                "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={client}\nclientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n{servers}",
                data.display()
            );
            std::fs::write(node_dir.join("zoo.cfg"), config).expect("zoo.cfg");
            nodes.push(Node {
                dir: node_dir,
                client_port: *client,
                child: None,
            });
        }
        let mut ensemble = Ensemble { nodes, _dir: dir };
        for i in 0..3 {
            ensemble.launch(i);
        }
        ensemble.wait_formed(Duration::from_secs(90));
        ensemble
    }

    /// The connect string of all three nodes.
    pub fn connect_string(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The index of the current leader, if one answers.
    pub fn leader(&self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.mode(i).as_deref() == Some("leader"))
    }

    /// Kills node `i` (SIGKILL, by PID).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts node `i` again on its data.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.launch(i);
    }

    /// Waits until one node leads and the others follow (bounded by `limit`).
    ///
    /// # Panics
    /// When that does not happen within `limit`.
    pub fn wait_formed(&self, limit: Duration) {
        let started = Instant::now();
        loop {
            let modes: Vec<Option<String>> = (0..self.nodes.len()).map(|i| self.mode(i)).collect();
            let leaders = modes
                .iter()
                .filter(|m| m.as_deref() == Some("leader"))
                .count();
            let followers = modes
                .iter()
                .filter(|m| m.as_deref() == Some("follower"))
                .count();
            if leaders == 1 && followers == self.nodes.len() - 1 {
                return;
            }
            if started.elapsed() >= limit {
                panic!(
                    "ensemble did not form within {limit:?}: {modes:?}{}",
                    self.log_tails(&modes)
                );
            }
            // A foreign process's readiness: nothing to await but its answers.
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last lines of the log of every node that neither leads nor
    /// follows: why it did not join (a port taken, a JVM that never started).
    fn log_tails(&self, modes: &[Option<String>]) -> String {
        let mut tails = String::new();
        for (node, mode) in self.nodes.iter().zip(modes) {
            if matches!(mode.as_deref(), Some("leader" | "follower")) {
                continue;
            }
            let tail = crate::last_lines(&node.dir.join("server.log"), 15);
            tails.push_str(&format!(
                "\n--- {} (client port {}), last lines of server.log:\n{tail}",
                node.dir.display(),
                node.client_port
            ));
        }
        tails
    }

    fn mode(&self, i: usize) -> Option<String> {
        let answer = four_letter(self.nodes[i].client_port, "srvr")?;
        answer
            .lines()
            .find_map(|l| l.strip_prefix("Mode: "))
            .map(|m| m.trim().to_owned())
    }

    fn launch(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let log = std::fs::File::create(node.dir.join("server.log")).expect("log file");
        let child = Command::new("bash")
            .arg(ZK_SERVER)
            .arg("start-foreground")
            .arg(node.dir.join("zoo.cfg"))
            .env("ZOO_LOG_DIR", &node.dir)
            .env(
                "JVMFLAGS",
                "-Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dznode.container.checkIntervalMs=100",
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start zkServer.sh");
        node.child = Some(child);
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }
}
