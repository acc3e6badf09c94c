//! Counting the holders of a semaphore at once, across guests, hosts and
//! foreign clients: a session observer that logs when each session starts
//! (`+holder`, after the grant) and stops (`-holder`, before the release)
//! holding a permit, into one totally ordered log, and the replay of such a
//! log. Each logged interval lies within the real hold, so the replay
//! never sees more holders at once than there were.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wardlock_host::backend::observe::{BackendObserver, ObservedBackend, SessionObserver};
use wardlock_host::backend::{Request, RequestKind};
use wardlock_host::{Grant, GrantId, LockBackend};
use zookeeper_client::{Acls, Client, CreateMode};

/// Appends one event to the log and returns once it is there; the log's
/// order is the order these calls returned in.
pub type Sink = Arc<dyn Fn(String) + Send + Sync>;

/// A log in this process's memory.
pub fn memory_sink() -> (Sink, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = log.clone();
    let sink: Sink = Arc::new(move |event| kept.lock().expect("log").push(event));
    (sink, log)
}

/// A log of PERSISTENT_SEQUENTIAL nodes `<parent>/e-…` on ZooKeeper (the
/// layout the Curator driver's `semaphore leases` command writes).
///
/// Each event is written before the call returns: on the runtime this is
/// called on, the calling worker handing its other tasks to another thread
/// meanwhile (`block_in_place`), so it must be called on a multi-threaded
/// runtime, as the tests that log holds are.
///
/// # Panics
/// Outside a tokio runtime.
pub fn zookeeper_sink(client: Arc<Client>, parent: &str) -> Sink {
    let path = format!("{parent}/e-");
    let runtime = tokio::runtime::Handle::current();
    Arc::new(move |event: String| {
        let options = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
        let write = client.create(&path, event.as_bytes(), &options);
        tokio::task::block_in_place(|| runtime.block_on(write)).expect("log event");
    })
}

/// The events of a [`zookeeper_sink`] log, in ZooKeeper's order.
pub async fn zookeeper_events(client: &Client, parent: &str) -> Vec<String> {
    let mut children = client.list_children(parent).await.expect("events");
    children.sort();
    let mut events = Vec::with_capacity(children.len());
    for child in children {
        let (data, _) = client
            .get_data(&format!("{parent}/{child}"))
            .await
            .expect("event");
        events.push(String::from_utf8(data).expect("utf-8"));
    }
    events
}

/// A log replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The most holders at once.
    pub most: usize,
    /// How many holds there were (each `-` closes its holder's `+`).
    pub intervals: usize,
    /// Whether holders of the two prefixes given held together at some point.
    pub mixed: bool,
}

/// Replays `events`; `mixed` tells whether a holder starting with `a` and one
/// starting with `b` ever held together.
///
/// # Panics
/// On a malformed log: a holder holding twice, releasing unheld, or still
/// holding at the end.
pub fn replay(events: &[String], a: &str, b: &str) -> Replay {
    let mut holding = HashSet::new();
    let (mut most, mut intervals, mut mixed) = (0, 0, false);
    for event in events {
        let (sign, holder) = event.split_at(1);
        if sign == "+" {
            assert!(holding.insert(holder.to_owned()), "{holder} held twice");
            intervals += 1;
            most = most.max(holding.len());
            mixed |= holding.iter().any(|h| h.starts_with(a))
                && holding.iter().any(|h| h.starts_with(b));
        } else {
            assert!(holding.remove(holder), "{holder} released unheld");
        }
    }
    assert!(holding.is_empty(), "unfinished intervals: {holding:?}");
    Replay {
        most,
        intervals,
        mixed,
    }
}

/// Wraps a backend: its sessions' permits are logged to a [`Sink`] as held
/// by `<prefix><session owner>#<grant>`: `+` once granted (before the
/// caller hears of the grant), `-` before the release is made. Each logged
/// interval so lies within the real hold. Locks are not logged.
///
/// An observer of [`ObservedBackend`], as every watcher of sessions is.
pub struct HoldLog {
    prefix: String,
    sink: Sink,
}

impl HoldLog {
    /// `inner`, logging to `sink`.
    pub fn wrap(inner: Arc<dyn LockBackend>, prefix: &str, sink: Sink) -> Arc<dyn LockBackend> {
        let log = HoldLog {
            prefix: prefix.to_owned(),
            sink,
        };
        Arc::new(ObservedBackend::new(inner, log))
    }
}

impl BackendObserver for HoldLog {
    type Session = HoldLogObserver;

    fn session(&self, owner: &str) -> HoldLogObserver {
        HoldLogObserver {
            holder: format!("{}{owner}", self.prefix),
            sink: self.sink.clone(),
            permits: Mutex::new(HashSet::new()),
        }
    }
}

/// The hold log of one session.
pub struct HoldLogObserver {
    holder: String,
    sink: Sink,
    /// The permits granted and not yet released.
    permits: Mutex<HashSet<GrantId>>,
}

impl SessionObserver for HoldLogObserver {
    fn granted(&self, request: Request<'_>, grant: &Grant, _waited: Option<Duration>) {
        if let RequestKind::Permit(_) = request.kind {
            (self.sink)(format!("+{}#{}", self.holder, grant.id.0));
            self.permits.lock().expect("permits").insert(grant.id);
        }
    }

    fn released(&self, grant: GrantId) {
        if self.permits.lock().expect("permits").remove(&grant) {
            (self.sink)(format!("-{}#{}", self.holder, grant.0));
        }
    }

    /// A session dropped with permits releases them: logged first.
    fn closing(&self) {
        let open: Vec<GrantId> = self.permits.lock().expect("permits").drain().collect();
        for grant in open {
            (self.sink)(format!("-{}#{}", self.holder, grant.0));
        }
    }
}
