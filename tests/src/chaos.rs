//! Workers that contend on one lock through several hosts while a test breaks
//! the lock service underneath them (leader kills, server restarts). Each
//! turn adds one element to a set file under the lock (read, yield, write
//! back), and every step goes into one history, judged by the one checker of
//! every fault run ([`crate::lock_set::history::check`]):
//! - `acquire` `invoke`, then `ok` with the grant's token (or `fail`);
//! - `add` `invoke` and `ok` with the element;
//! - `release` `invoke`;
//! - `lost` (`info`, with the token): the moment the host told the hold
//!   `lost`, seen by a watcher of the grant's status as it happens.
//!
//! Stamped on one monotonic clock, in one order (under one lock), so the
//! checker sees the order of events, not a margin: a hold that overlaps
//! another before its `lost` is a double holder; a hold after `lost` is
//! excused nothing. Engine-neutral: the failover tests of ZooKeeper, etcd
//! and PostgreSQL share it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;
use wardlock_host::{GrantId, GrantStatus, LockBackend, LockSession, Mode};

use crate::history_log::HistoryLog;
use crate::lock_set::history::{self, FinalSet, Kind, Variant};
use crate::name;

/// Most acquisitions per worker: bounds the loop in count as well as in time
/// (a run makes a few hundred in all).
const MAX_OPS: usize = 20_000;

/// Workers running until [`Contention::finish`].
pub struct Contention {
    history: Arc<HistoryLog>,
    errors: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    /// Per host: how many turns its workers have begun.
    begun: Vec<Arc<tokio::sync::watch::Sender<u64>>>,
    set: PathBuf,
    _dir: tempfile::TempDir,
}

/// What the checker found in the run's history.
#[derive(Debug)]
pub struct ContentionReport {
    /// Acknowledged adds: turns completed under the lock.
    pub increments: u64,
    /// Acknowledged adds missing from the set as it ended.
    pub lost_updates: u64,
    /// Pairs of holds at once, neither yet told `lost` (the checker's (c)).
    pub double_holders: u64,
    /// Holds their host told `lost` while they held.
    pub told_lost: u64,
    /// Holds whose token is not above that of the hold before them.
    pub token_regressions: u64,
    /// Acquisitions and releases that failed.
    pub errors: usize,
    /// The checker's first problems, for a failure message.
    pub problems: Vec<String>,
}

impl Contention {
    /// Starts `workers` workers on each of `hosts`, all on lock `lock`; each
    /// waits at most `wait` for a grant.
    pub fn start(
        hosts: &[Arc<dyn LockBackend>],
        workers: usize,
        lock: &str,
        wait: Duration,
    ) -> Self {
        Self::start_with_holds(hosts, workers, lock, wait, &[])
    }

    /// [`Contention::start`], where the workers of host `i` spend `holds[i]`
    /// (none past the slice's end) between reading the set and writing it
    /// back: a long critical section, for faults that must find a holder
    /// inside one and outlast a session while it holds.
    pub fn start_with_holds(
        hosts: &[Arc<dyn LockBackend>],
        workers: usize,
        lock: &str,
        wait: Duration,
        holds: &[Duration],
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let set = dir.path().join("set");
        std::fs::write(&set, "").expect("set file");
        let history = HistoryLog::new();
        let errors = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        let mut begun = Vec::new();
        for (host, backend) in hosts.iter().enumerate() {
            let host_begun = Arc::new(tokio::sync::watch::Sender::new(0));
            begun.push(host_begun.clone());
            for worker in 0..workers {
                let turns = Turns {
                    id: format!("h{host}w{worker}"),
                    session: Arc::from(
                        backend.open_session(&format!("host {host} worker {worker}")),
                    ),
                    lock: lock.to_owned(),
                    wait,
                    hold: holds.get(host).copied().unwrap_or(Duration::ZERO),
                    begun: host_begun.clone(),
                    set: set.clone(),
                    history: history.clone(),
                    errors: errors.clone(),
                    stop: stop.clone(),
                };
                handles.push(tokio::spawn(turns.run()));
            }
        }
        Contention {
            history,
            errors,
            stop,
            workers: handles,
            begun,
            set,
            _dir: dir,
        }
    }

    /// Waits until a worker of host `host` (its index in `hosts`) begins a
    /// turn (reads the set, under its grant) after this call.
    ///
    /// # Panics
    /// When none does within [`crate::TEST_WAIT_LIMIT`].
    pub async fn until_next_turn(&self, host: usize) {
        let mut begun = self.begun[host].subscribe();
        let before = *begun.borrow_and_update();
        tokio::time::timeout(crate::TEST_WAIT_LIMIT, begun.wait_for(|n| *n > before))
            .await
            .expect("a worker of the host began a turn within the wait limit")
            .expect("the workers' counter lives");
    }

    /// Stops the workers (each finishes its turn, bounded by 60 s) and
    /// judges the history.
    pub async fn finish(self) -> ContentionReport {
        self.stop.store(true, Ordering::SeqCst);
        for worker in self.workers {
            tokio::time::timeout(Duration::from_secs(60), worker)
                .await
                .expect("worker finishes")
                .expect("worker");
        }
        let last = FinalSet::from_file_text(&std::fs::read_to_string(&self.set).expect("set"));
        let events = self.history.take();
        let told_lost = events.iter().filter(|e| e.op == "lost").count() as u64;
        let report = history::check(&events, &last, Variant::Plain, 0);
        ContentionReport {
            increments: report.counts.acknowledged,
            lost_updates: report.counts.lost,
            double_holders: report.counts.overlaps,
            told_lost,
            token_regressions: report.counts.token_regressions,
            errors: self.errors.load(Ordering::SeqCst),
            problems: report.problems,
        }
    }
}

impl ContentionReport {
    /// The figures as JSON fields (`"increments":N,...`), for a test's one
    /// metric line.
    pub fn json_fields(&self) -> String {
        format!(
            "\"increments\":{},\"lost_updates\":{},\"double_holders\":{},\"told_lost\":{},\"token_regressions\":{},\"errors\":{}",
            self.increments,
            self.lost_updates,
            self.double_holders,
            self.told_lost,
            self.token_regressions,
            self.errors
        )
    }

    /// What every fault run must show: turns were made; no two holders at
    /// once before one was told `lost`; tokens rising from hold to hold; no
    /// error seen by a worker.
    ///
    /// # Panics
    /// When one of them fails, with the checker's problems.
    pub fn assert_safe(&self) {
        assert!(self.increments > 0, "no turn was made: {self:?}");
        assert_eq!(
            self.double_holders, 0,
            "double holders: {:#?}",
            self.problems
        );
        assert_eq!(
            self.token_regressions, 0,
            "tokens went down: {:#?}",
            self.problems
        );
        assert_eq!(self.errors, 0, "{self:?}");
    }

    /// [`ContentionReport::assert_safe`], and the faults were invisible to
    /// the holders: none told `lost`, no update lost.
    ///
    /// # Panics
    /// When one of them fails.
    pub fn assert_invisible(&self) {
        self.assert_safe();
        assert_eq!(
            self.told_lost, 0,
            "a fault ended a holder's session: {self:?}"
        );
        assert_eq!(self.lost_updates, 0, "lost updates: {:#?}", self.problems);
    }
}

/// One worker: its turns on the lock until stopped.
struct Turns {
    id: String,
    session: Arc<dyn LockSession>,
    lock: String,
    wait: Duration,
    /// Spent between reading the set and writing it back.
    hold: Duration,
    /// The host's count of turns begun.
    begun: Arc<tokio::sync::watch::Sender<u64>>,
    set: PathBuf,
    history: Arc<HistoryLog>,
    errors: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Turns {
    async fn run(self) {
        let lock = name(&self.lock);
        let id = self.id.as_str();
        for turn in 0..MAX_OPS {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            self.history.record("acquire", Kind::Invoke, id, None, None);
            let grant = match self
                .session
                .acquire(&lock, Mode::Exclusive, Some(self.wait))
                .await
            {
                Ok(grant) => grant,
                Err(error) => {
                    self.history.record("acquire", Kind::Fail, id, None, None);
                    eprintln!("{id}: {error}");
                    self.errors.fetch_add(1, Ordering::SeqCst);
                    // A back-off, not a synchronisation: the test fails anyway.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let token = Some(grant.token);
            self.history.record("acquire", Kind::Ok, id, None, token);
            let watcher = tokio::spawn(watch_loss(
                self.session.clone(),
                grant.id,
                self.history.clone(),
                self.id.clone(),
                grant.token,
            ));
            let element = format!("{id}-{turn}");
            self.history
                .record("add", Kind::Invoke, id, Some(&element), token);
            self.begun.send_modify(|n| *n += 1);
            let mut set = std::fs::read_to_string(&self.set).expect("read the set");
            tokio::task::yield_now().await;
            if !self.hold.is_zero() {
                // The critical section's work, not a synchronisation.
                tokio::time::sleep(self.hold).await;
            }
            set.push_str(&element);
            set.push('\n');
            replace_file(&self.set, &set);
            self.history
                .record("add", Kind::Ok, id, Some(&element), token);
            self.history
                .record("release", Kind::Invoke, id, None, token);
            if let Err(error) = self.session.release(grant.id) {
                eprintln!("{id}: release: {error}");
                self.errors.fetch_add(1, Ordering::SeqCst);
            }
            // Released: what its status does now is no news of the hold.
            watcher.abort();
        }
    }
}

/// Records `lost` (with the hold's token) the moment `grant` is told it;
/// ends quietly when it is released first.
async fn watch_loss(
    session: Arc<dyn LockSession>,
    grant: GrantId,
    history: Arc<HistoryLog>,
    id: String,
    token: u64,
) {
    let mut seen = GrantStatus::Held;
    loop {
        match session.status_changed(grant, seen).await {
            GrantStatus::Lost => {
                history.record("lost", Kind::Info, &id, None, Some(token));
                return;
            }
            GrantStatus::Released => return,
            now => seen = now,
        }
    }
}

/// Writes `text` to `path` by renaming a file written beside it, so a worker
/// that reads while another writes (a holder told `lost` still finishing its
/// turn) sees the old set or the new one, never a truncated file: a plain
/// write let such a reader read an empty set and write back one element, so
/// one overlap cost every update before it. Each writer's file is its own
/// (named by the task).
fn replace_file(path: &Path, text: &str) {
    let task = tokio::task::try_id().map_or_else(|| "main".to_owned(), |id| id.to_string());
    let scratch = path.with_extension(format!("new-{task}"));
    std::fs::write(&scratch, text).expect("write the set");
    std::fs::rename(&scratch, path).expect("replace the set");
}
