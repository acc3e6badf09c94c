//! A Valkey/Redis primary, its replica and three Sentinels for tests, each
//! on a free loopback port, each process stopped (SIGKILL, by PID) when the
//! guard drops, failed or not. The Sentinels fail over one second after the
//! primary stops answering (`down-after-milliseconds 1000`, quorum 2 of 3).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;
use crate::redis_server::{Flavor, RedisServer};

/// The name the Sentinels monitor the primary under.
pub const MASTER: &str = "wardlock-primary";

/// One Sentinel process.
struct Sentinel {
    child: Child,
    port: u16,
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two servers (one primary, one replica at the start) and three Sentinels.
pub struct SentinelGroup {
    /// The servers; which is primary changes with failovers.
    pub servers: Vec<RedisServer>,
    sentinels: Vec<Sentinel>,
    dir: tempfile::TempDir,
}

impl SentinelGroup {
    /// Starts the primary, its replica (in sync) and the Sentinels, and
    /// waits (bounded) until every Sentinel knows the replica, so a
    /// failover has a server to promote.
    ///
    /// # Panics
    /// When a process does not start or the group is not ready in 30 s.
    pub fn start(flavor: Flavor) -> SentinelGroup {
        // A replica syncs at once (no 5 s wait for more replicas to share a
        // diskless sync).
        let quick = ["--repl-diskless-sync-delay", "0"];
        let primary = RedisServer::start_with(flavor, &quick);
        let of = primary.port().to_string();
        let replica = RedisServer::start_with(
            flavor,
            &[quick[0], quick[1], "--replicaof", "127.0.0.1", &of],
        );
        let dir = tempfile::Builder::new()
            .prefix("wardlock-sentinel-")
            .tempdir()
            .expect("temp dir");
        let mut group = SentinelGroup {
            servers: vec![primary, replica],
            sentinels: Vec::new(),
            dir,
        };
        for index in 0..3 {
            let port = free_port();
            let conf = group.dir.path().join(format!("sentinel-{index}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\nprotected-mode no\ndir {dir}\n\
                     logfile {dir}/sentinel-{index}.log\n\
                     sentinel monitor {MASTER} 127.0.0.1 {of} 2\n\
                     sentinel down-after-milliseconds {MASTER} 1000\n\
                     sentinel failover-timeout {MASTER} 4000\n\
                     sentinel parallel-syncs {MASTER} 1\n",
                    dir = group.dir.path().display()
                ),
            )
            .expect("write the sentinel config");
            let child = Command::new(flavor.binary())
                .arg(&conf)
                .arg("--sentinel")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start a sentinel");
            group.sentinels.push(Sentinel { child, port });
        }
        group.wait_until(
            Duration::from_secs(30),
            "the replica is in sync and every Sentinel knows it",
            |g| {
                g.in_sync(1)
                    && g.sentinels.iter().all(|s| {
                        g.ask(s.port, &["SENTINEL", "REPLICAS", MASTER])
                            .contains("slave")
                    })
            },
        );
        group
    }

    /// Whether the server at `index` is a replica with its link to the
    /// primary up (its initial sync done).
    pub fn in_sync(&self, index: usize) -> bool {
        let info = self.servers[index].cli(&["INFO", "replication"]);
        info.contains("role:slave") && info.contains("master_link_status:up")
    }

    /// `HOST:PORT` of each Sentinel.
    pub fn addresses(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect()
    }

    /// The primary's port as each Sentinel names it (`None` where one does
    /// not answer).
    pub fn named_primaries(&self) -> Vec<Option<u16>> {
        self.sentinels
            .iter()
            .map(|s| {
                let answer = self.ask(s.port, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER]);
                answer.lines().nth(1).and_then(|p| p.trim().parse().ok())
            })
            .collect()
    }

    /// The index in [`SentinelGroup::servers`] of the server every Sentinel
    /// names the primary, once they agree and it says it is one.
    pub fn agreed_primary(&self) -> Option<usize> {
        let named = self.named_primaries();
        let first = (*named.first()?)?;
        if named.iter().any(|n| *n != Some(first)) {
            return None;
        }
        let index = self.servers.iter().position(|s| s.port() == first)?;
        self.servers[index]
            .cli(&["ROLE"])
            .starts_with("master")
            .then_some(index)
    }

    /// Waits (bounded by `limit`) until `done`, naming `what` when it fails,
    /// with every Sentinel's log.
    ///
    /// # Panics
    /// When `limit` passes first.
    pub fn wait_until(&self, limit: Duration, what: &str, done: impl Fn(&Self) -> bool) {
        let started = Instant::now();
        while !done(self) {
            assert!(
                started.elapsed() < limit,
                "not within {limit:?}: {what}; sentinels said {:?}\n{}",
                self.named_primaries(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every Sentinel's log.
    pub fn logs(&self) -> String {
        (0..self.sentinels.len())
            .map(|i| {
                let path: PathBuf = self.dir.path().join(format!("sentinel-{i}.log"));
                format!(
                    "-- sentinel {i}:\n{}",
                    std::fs::read_to_string(path).unwrap_or_default()
                )
            })
            .collect()
    }

    fn ask(&self, port: u16, args: &[&str]) -> String {
        Command::new("redis-cli")
            .args(["-p", &port.to_string()])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}
