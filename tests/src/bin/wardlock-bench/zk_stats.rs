//! Server-side ZooKeeper counters, read with the four-letter words `mntr` and
//! `wchs` before and after each measured phase.
//!
//! - requests: `zk_packets_received` (every request packet the server read:
//!   creates, reads, deletes, watches set, pings, connects), minus the
//!   four-letter words this process sent in between (each counts as one packet).
//! - notifications: the sum of `zk_sum_node_created_watch_count`,
//!   `zk_sum_node_deleted_watch_count`, `zk_sum_node_changed_watch_count` and
//!   `zk_sum_node_children_watch_count`: for every event that fired watches,
//!   how many watchers it notified.
//!
//! The counters are server-wide: they are exact only while nothing else uses
//! the server, which holds for the server `wardlock-bench` starts itself.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::Add;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};

/// The `mntr` keys whose sum is the number of watch notifications.
pub(crate) const NOTIFICATION_COUNTERS: [&str; 4] = [
    "zk_sum_node_created_watch_count",
    "zk_sum_node_deleted_watch_count",
    "zk_sum_node_changed_watch_count",
    "zk_sum_node_children_watch_count",
];

/// The `mntr` key counting request packets.
pub(crate) const REQUEST_COUNTER: &str = "zk_packets_received";

/// Reads one server's counters.
pub(crate) struct ZkStats {
    /// `HOST:PORT` of the server.
    address: String,
    /// Four-letter words sent so far (each is one packet on the server).
    words: AtomicU64,
}

/// Counters at one moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ZkSnapshot {
    packets_received: u64,
    notifications: u64,
    /// Four-letter words sent up to and including the one that read this.
    words: u64,
}

/// Counter differences over a phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ZkDelta {
    pub requests: u64,
    pub notifications: u64,
}

impl Add for ZkDelta {
    type Output = ZkDelta;

    fn add(self, other: ZkDelta) -> ZkDelta {
        ZkDelta {
            requests: self.requests + other.requests,
            notifications: self.notifications + other.notifications,
        }
    }
}

impl ZkSnapshot {
    /// What happened between `before` and this snapshot.
    pub(crate) fn since(&self, before: &ZkSnapshot) -> ZkDelta {
        let words = self.words - before.words;
        ZkDelta {
            requests: (self.packets_received - before.packets_received).saturating_sub(words),
            notifications: self.notifications - before.notifications,
        }
    }
}

impl ZkStats {
    /// Counters of the server at `address` (the first of a `HOST:PORT,...` list).
    pub(crate) fn new(address: &str) -> ZkStats {
        ZkStats {
            address: address
                .split(',')
                .next()
                .unwrap_or(address)
                .trim()
                .to_owned(),
            words: AtomicU64::new(0),
        }
    }

    /// Reads `mntr`.
    ///
    /// # Errors
    /// When the server cannot be reached or does not answer `mntr` (it must be
    /// in `4lw.commands.whitelist`).
    pub(crate) fn snapshot(&self) -> anyhow::Result<ZkSnapshot> {
        let (answer, words) = self.four_letter("mntr")?;
        let value = |key: &str| -> anyhow::Result<u64> {
            answer
                .lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix('\t'))
                .with_context(|| format!("mntr has no {key} (is mntr whitelisted?)"))?
                .trim()
                .parse()
                .with_context(|| format!("mntr {key} is not a number"))
        };
        let mut notifications = 0;
        for key in NOTIFICATION_COUNTERS {
            notifications += value(key)?;
        }
        Ok(ZkSnapshot {
            packets_received: value(REQUEST_COUNTER)?,
            notifications,
            words,
        })
    }

    /// The number of watches the server holds (`wchs`: `Total watches:N`).
    ///
    /// # Errors
    /// As [`ZkStats::snapshot`].
    pub(crate) fn watch_count(&self) -> anyhow::Result<u64> {
        let (answer, _) = self.four_letter("wchs")?;
        answer
            .lines()
            .find_map(|line| line.strip_prefix("Total watches:"))
            .with_context(|| format!("unexpected wchs answer {answer:?}"))?
            .trim()
            .parse()
            .context("wchs total is not a number")
    }

    /// Waits (polling `wchs` every 5 ms, at most `limit`) until the server holds
    /// at least `count` watches.
    ///
    /// # Errors
    /// When the count is not reached within `limit`.
    pub(crate) async fn wait_watches(&self, count: u64, limit: Duration) -> anyhow::Result<()> {
        let started = tokio::time::Instant::now();
        loop {
            let now = self.watch_count()?;
            if now >= count {
                return Ok(());
            }
            if started.elapsed() > limit {
                bail!("only {now} of {count} watches set after {limit:?}");
            }
            // The server announces nothing when a watch is set: poll its report.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn four_letter(&self, word: &str) -> anyhow::Result<(String, u64)> {
        let words = self.words.fetch_add(1, Ordering::SeqCst) + 1;
        let mut stream = TcpStream::connect(&self.address)
            .with_context(|| format!("connecting to {} for {word}", self.address))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.write_all(word.as_bytes())?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        if answer.contains("is not executed because it is not in the whitelist") {
            bail!("{word} is not whitelisted on {}", self.address);
        }
        Ok((answer, words))
    }
}
