//! The host's one subscription, `ROOT/%wake/HOST`: a release tells each
//! member it lets in (`grant MEMBER`) and an arrival tells each holder it
//! queues behind (`behind MEMBER`), on the channel of that member's host
//! only. Waiters register what they wait for before they look at the
//! queue, so a message sent between the look and the wait is not missed;
//! a message sent while the subscription was down is (pub/sub keeps
//! nothing), so every (re)subscription bumps an epoch that makes every
//! waiter look again.
//!
//! An election's observers on this host hear `leader NAME` (sent to the
//! hosts registered in `ROOT/%observers/NAME`, see `election`): every
//! observer of NAME here looks again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{Notify, watch};

use crate::link::Server;

/// What one waiter waits to be told.
pub(crate) struct Registration {
    wake: Weak<Wake>,
    key: String,
    pub(crate) notify: Arc<Notify>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(wake) = self.wake.upgrade() {
            let mut waiters = wake.waiters();
            if waiters
                .get(&self.key)
                .is_some_and(|n| Arc::ptr_eq(n, &self.notify))
            {
                waiters.remove(&self.key);
            }
        }
    }
}

/// The host's subscription and who waits on it.
pub(crate) struct Wake {
    waiters: Mutex<HashMap<String, Arc<Notify>>>,
    /// Per election name observed here: bumped at each `leader NAME`.
    leaders: Mutex<HashMap<String, watch::Sender<u64>>>,
    /// Bumped at every (re)subscription.
    epoch: watch::Sender<u64>,
    /// Set when the backend is dropped: the listener ends.
    closed: watch::Sender<bool>,
}

impl Wake {
    /// A subscription to `channel`, kept by a task on `runtime` until
    /// [`Wake::close`].
    pub(crate) fn start(
        server: Arc<Server>,
        channel: String,
        runtime: &tokio::runtime::Handle,
    ) -> Arc<Self> {
        let wake = Arc::new(Wake {
            waiters: Mutex::new(HashMap::new()),
            leaders: Mutex::new(HashMap::new()),
            epoch: watch::Sender::new(0),
            closed: watch::Sender::new(false),
        });
        runtime.spawn(listen(Arc::downgrade(&wake), server, channel));
        wake
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a wait for `what` (`grant` or `behind`) of `member`.
    pub(crate) fn register(self: &Arc<Self>, what: &str, member: &str) -> Registration {
        let key = format!("{what} {member}");
        let notify = Arc::new(Notify::new());
        self.waiters().insert(key.clone(), notify.clone());
        Registration {
            wake: Arc::downgrade(self),
            key,
            notify,
        }
    }

    /// What changes when this host is told that election `name`'s leader
    /// (or its value) changed. Names nobody here observes any more are
    /// forgotten on the way.
    pub(crate) fn leader_news(&self, name: &str) -> watch::Receiver<u64> {
        let mut leaders = self.leaders.lock().unwrap_or_else(|e| e.into_inner());
        leaders.retain(|_, news| news.receiver_count() > 0);
        leaders
            .entry(name.to_owned())
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }

    /// The subscription's epoch: changes when it was (re)made.
    pub(crate) fn epoch(&self) -> watch::Receiver<u64> {
        self.epoch.subscribe()
    }

    /// Waits until the subscription is up (bounded by `limit`).
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub(crate) async fn subscribed(&self, limit: Duration) -> bool {
        let mut epoch = self.epoch();
        tokio::time::timeout(limit, epoch.wait_for(|e| *e > 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Ends the subscription.
    pub(crate) fn close(&self) {
        self.closed.send_replace(true);
    }

    fn deliver(&self, payload: &str) {
        if let Some(name) = payload.strip_prefix("leader ") {
            let leaders = self.leaders.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(news) = leaders.get(name) {
                news.send_modify(|n| *n += 1);
            }
            return;
        }
        if let Some(notify) = self.waiters().get(payload) {
            notify.notify_one();
        }
    }
}

/// Subscribes, delivers, and subscribes again after a failure, until the
/// backend is gone.
/// It subscribes on the server the host's connection reaches (with
/// Sentinel, the primary named at its last connect).
async fn listen(wake: Weak<Wake>, server: Arc<Server>, channel: String) {
    let Some(mut closed) = wake.upgrade().map(|w| w.closed.subscribe()) else {
        return;
    };
    let mut pause = Duration::from_millis(50);
    loop {
        let session = async {
            server.link().await.ok()?;
            let mut pubsub = server.client().get_async_pubsub().await.ok()?;
            pubsub.subscribe(&channel).await.ok()?;
            wake.upgrade()?.epoch.send_modify(|e| *e += 1);
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                let Ok(payload) = message.get_payload::<String>() else {
                    continue;
                };
                wake.upgrade()?.deliver(&payload);
            }
            Some(())
        };
        tokio::select! {
            _ = session => {}
            _ = closed.wait_for(|c| *c) => return,
        }
        if wake.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}
