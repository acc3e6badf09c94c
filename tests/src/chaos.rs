//! Workers that contend on one lock through several hosts while a test breaks
//! the lock service underneath them (leader kills): each increments a counter
//! file under the lock and marks its turn with a create-new marker file, so a
//! double holder, a lost update or an error any worker saw is counted.
//! Engine-neutral: the failover tests of ZooKeeper, etcd and PostgreSQL
//! share it.
//!
//! A worker that finds the marker taken asks what its holder was told: a
//! holder already told `lost` (its server session ended under it, as a
//! PostgreSQL restart ends every session) may still be inside its turn, so
//! that overlap is counted apart (`overlaps_after_loss`); one whose holder
//! still reads `held` or `suspended` is a double holder.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use wardlock_host::{GrantId, GrantStatus, LockBackend, LockSession, Mode};

use crate::name;

/// Most acquisitions per worker: bounds the loop in count as well as in time
/// (a run makes a few hundred in all).
const MAX_OPS: usize = 20_000;

#[derive(Default)]
struct Tally {
    increments: AtomicUsize,
    double_holders: AtomicUsize,
    overlaps_after_loss: AtomicUsize,
    errors: AtomicUsize,
    /// The worker inside its turn (the marker's owner): its session and
    /// grant, so a worker that finds the marker taken can ask its status.
    holder: Mutex<Option<(Arc<dyn LockSession>, GrantId)>>,
}

impl Tally {
    fn holder(&self) -> std::sync::MutexGuard<'_, Option<(Arc<dyn LockSession>, GrantId)>> {
        self.holder.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Writes `value` to the counter file by renaming a file written beside
/// it, so a worker that reads while another writes sees the old value or the
/// new one, never a truncated file: with a plain write, an overlap's reader
/// could read "" as 0 and reset the counter, so one overlap cost thousands
/// of updates instead of one. Each writer's file is its own (named by the
/// task), so two overlapping writers never write into one file.
fn write_counter(counter: &std::path::Path, value: u64) {
    let task = tokio::task::try_id().map_or_else(|| "main".to_owned(), |id| id.to_string());
    let scratch = counter.with_extension(format!("new-{task}"));
    std::fs::write(&scratch, value.to_string()).expect("write counter");
    std::fs::rename(&scratch, counter).expect("replace counter");
}

/// Workers running until [`Contention::finish`].
pub struct Contention {
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    counter: PathBuf,
    _dir: tempfile::TempDir,
}

/// What the workers saw.
#[derive(Debug)]
pub struct ContentionReport {
    pub increments: usize,
    pub counter: usize,
    pub double_holders: usize,
    /// Overlaps with a holder already told `lost` (each may cost one update).
    pub overlaps_after_loss: usize,
    pub errors: usize,
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
        let dir = tempfile::tempdir().expect("temp dir");
        let counter = dir.path().join("count");
        let marker = dir.path().join("holder");
        std::fs::write(&counter, "0").expect("counter");
        let tally = Arc::new(Tally::default());
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for (host, backend) in hosts.iter().enumerate() {
            for worker in 0..workers {
                let (backend, tally, stop) = (backend.clone(), tally.clone(), stop.clone());
                let (counter, marker, lock) = (counter.clone(), marker.clone(), name(lock));
                handles.push(tokio::spawn(async move {
                    let session: Arc<dyn LockSession> =
                        Arc::from(backend.open_session(&format!("host {host} worker {worker}")));
                    for _ in 0..MAX_OPS {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let grant = match session.acquire(&lock, Mode::Exclusive, Some(wait)).await
                        {
                            Ok(grant) => grant,
                            Err(error) => {
                                eprintln!("host {host} worker {worker}: {error}");
                                tally.errors.fetch_add(1, Ordering::SeqCst);
                                // A back-off, not a synchronisation: the test fails anyway.
                                tokio::time::sleep(Duration::from_millis(100)).await;
                                continue;
                            }
                        };
                        let exclusive = std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(&marker);
                        if exclusive.is_err() {
                            let told_lost = tally
                                .holder()
                                .as_ref()
                                .is_some_and(|(other, id)| other.status(*id) == GrantStatus::Lost);
                            if told_lost {
                                tally.overlaps_after_loss.fetch_add(1, Ordering::SeqCst);
                            } else {
                                tally.double_holders.fetch_add(1, Ordering::SeqCst);
                            }
                        } else {
                            *tally.holder() = Some((session.clone(), grant.id));
                        }
                        let value: u64 = std::fs::read_to_string(&counter)
                            .expect("read counter")
                            .trim()
                            .parse()
                            .expect("the counter holds a number");
                        tokio::task::yield_now().await;
                        write_counter(&counter, value + 1);
                        tally.increments.fetch_add(1, Ordering::SeqCst);
                        if exclusive.is_ok() {
                            *tally.holder() = None;
                            let _ = std::fs::remove_file(&marker);
                        }
                        if let Err(error) = session.release(grant.id) {
                            eprintln!("host {host} worker {worker}: release: {error}");
                            tally.errors.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }));
            }
        }
        Contention {
            tally,
            stop,
            workers: handles,
            counter,
            _dir: dir,
        }
    }

    /// Stops the workers (each finishes its turn, bounded by 60 s) and
    /// reports.
    pub async fn finish(self) -> ContentionReport {
        self.stop.store(true, Ordering::SeqCst);
        for worker in self.workers {
            tokio::time::timeout(Duration::from_secs(60), worker)
                .await
                .expect("worker finishes")
                .expect("worker");
        }
        let counter = std::fs::read_to_string(&self.counter)
            .expect("counter")
            .trim()
            .parse()
            .expect("number");
        ContentionReport {
            increments: self.tally.increments.load(Ordering::SeqCst),
            counter,
            double_holders: self.tally.double_holders.load(Ordering::SeqCst),
            overlaps_after_loss: self.tally.overlaps_after_loss.load(Ordering::SeqCst),
            errors: self.tally.errors.load(Ordering::SeqCst),
        }
    }
}
