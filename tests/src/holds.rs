//! Counting the holders of a semaphore at once, across guests, hosts and
//! foreign clients: a backend wrapper that logs when each of its sessions
//! starts (`+holder`, after the grant) and stops (`-holder`, before the
//! release) holding a permit, into one totally ordered log, and the replay of
//! such a log. Each logged interval lies within the real hold, so the replay
//! never sees more holders at once than there were.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use wardlock_host::backend::{
    Contention, Request, RequestKind, Revocation, Semaphores, StatusChange,
};
use wardlock_host::{BackendError, Grant, GrantId, GrantStatus, LockBackend, LockSession};
use zookeeper_client::{Acls, Client, CreateMode};

/// Appends one event to the log; the log's order is the order the futures
/// completed in.
pub type Sink = Arc<dyn Fn(String) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A log in this process's memory.
pub fn memory_sink() -> (Sink, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = log.clone();
    let sink: Sink = Arc::new(move |event| {
        kept.lock().expect("log").push(event);
        Box::pin(async {})
    });
    (sink, log)
}

/// A log of PERSISTENT_SEQUENTIAL nodes `<parent>/e-…` on ZooKeeper (the
/// layout the Curator driver's `semaphore leases` command writes).
pub fn zookeeper_sink(client: Arc<Client>, parent: &str) -> Sink {
    let path = format!("{parent}/e-");
    Arc::new(move |event: String| {
        let (client, path) = (client.clone(), path.clone());
        Box::pin(async move {
            let options = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
            client
                .create(&path, event.as_bytes(), &options)
                .await
                .expect("log event");
        })
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
/// by `<prefix><session owner>#<grant>` (per grant: a release is logged in a
/// task of its own, so the session's next permit may be logged first).
pub struct HoldLog {
    inner: Arc<dyn LockBackend>,
    prefix: String,
    sink: Sink,
}

impl HoldLog {
    /// Wraps `inner`, logging to `sink`.
    pub fn new(inner: Arc<dyn LockBackend>, prefix: &str, sink: Sink) -> Arc<HoldLog> {
        Arc::new(HoldLog {
            inner,
            prefix: prefix.to_owned(),
            sink,
        })
    }
}

impl LockBackend for HoldLog {
    fn open_session(&self, owner: &str) -> Box<dyn LockSession> {
        Box::new(HoldLogSession {
            inner: Arc::from(self.inner.open_session(owner)),
            holder: format!("{}{owner}", self.prefix),
            sink: self.sink.clone(),
            permits: Mutex::new(HashSet::new()),
        })
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
}

struct HoldLogSession {
    /// Shared with the tasks that log a release before making it.
    inner: Arc<dyn LockSession>,
    holder: String,
    sink: Sink,
    /// The permits granted and not yet released.
    permits: Mutex<HashSet<GrantId>>,
}

impl HoldLogSession {
    async fn held(&self, grant: Grant) -> Grant {
        (self.sink)(format!("+{}#{}", self.holder, grant.id.0)).await;
        self.permits.lock().expect("permits").insert(grant.id);
        grant
    }
}

#[async_trait]
impl LockSession for HoldLogSession {
    /// A permit is logged as held once granted; a lock passes through.
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        let grant = self.inner.acquire_request(request, timeout).await?;
        match request.kind {
            RequestKind::Permit(_) => Ok(self.held(grant).await),
            RequestKind::Lock(_) => Ok(grant),
        }
    }

    async fn try_acquire_request(
        &self,
        request: Request<'_>,
    ) -> Result<Option<Grant>, BackendError> {
        match (self.inner.try_acquire_request(request).await?, request.kind) {
            (Some(grant), RequestKind::Permit(_)) => Ok(Some(self.held(grant).await)),
            (granted, _) => Ok(granted),
        }
    }

    /// A permit's release is logged first, then made, in a task (`release`
    /// cannot await); a lock's is made at once.
    fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        let permit = self.permits.lock().expect("permits").remove(&grant);
        let runtime = tokio::runtime::Handle::try_current();
        match (permit, runtime) {
            (true, Ok(runtime)) => {
                let (inner, sink) = (self.inner.clone(), self.sink.clone());
                let event = format!("-{}#{}", self.holder, grant.0);
                runtime.spawn(async move {
                    sink(event).await;
                    let _ = inner.release(grant);
                });
                Ok(())
            }
            _ => self.inner.release(grant),
        }
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        self.inner.status(grant)
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        self.inner.status_changed(grant, seen)
    }

    /// This wrapper, so permits pass through `acquire_request` above.
    fn semaphores(&self) -> Result<&dyn Semaphores, BackendError> {
        self.inner.semaphores()?;
        Ok(self)
    }

    /// The engine's own: nothing of revocation is logged.
    fn revocation(&self) -> Result<&dyn Revocation, BackendError> {
        self.inner.revocation()
    }

    /// The engine's own: a listing is not logged.
    fn contention(&self) -> Result<&dyn Contention, BackendError> {
        self.inner.contention()
    }
}

impl Semaphores for HoldLogSession {}
