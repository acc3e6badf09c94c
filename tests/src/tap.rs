//! A backend wrapper that reports each lock request of its sessions, with the
//! instant the host received it, before passing it on: how a test learns when
//! a guest acted, on a backend it cannot observe as events (ZooKeeper).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::mpsc;
use wardlock_host::backend::{Request, Revoked, StatusChange};
use wardlock_host::{
    BackendError, Grant, GrantId, GrantStatus, LockBackend, LockName, LockSession,
};

/// One request seen by a [`Tap`]: the lock name and when it arrived; an
/// `acquire` that succeeds is reported again as `granted <name>`, a
/// revocation request as `revoke <name>` when it arrives and `asked <name>`
/// when the backend answered it.
pub type Tapped = (String, Instant);

/// Wraps a backend; every `acquire`, `try_acquire` and `request_revocation`
/// is reported first.
pub struct Tap {
    inner: Arc<dyn LockBackend>,
    report: mpsc::UnboundedSender<Tapped>,
}

impl Tap {
    /// Wraps `inner`; the receiver gets every request.
    pub fn new(inner: Arc<dyn LockBackend>) -> (Arc<Tap>, mpsc::UnboundedReceiver<Tapped>) {
        let (report, requests) = mpsc::unbounded_channel();
        (Arc::new(Tap { inner, report }), requests)
    }
}

impl LockBackend for Tap {
    fn open_session(&self, owner: &str) -> Box<dyn LockSession> {
        Box::new(TapSession {
            inner: self.inner.open_session(owner),
            report: self.report.clone(),
        })
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
}

struct TapSession {
    inner: Box<dyn LockSession>,
    report: mpsc::UnboundedSender<Tapped>,
}

#[async_trait]
impl LockSession for TapSession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        let name = request.name;
        let _ = self.report.send((name.to_string(), Instant::now()));
        let grant = self.inner.acquire_request(request, timeout).await;
        if grant.is_ok() {
            let _ = self
                .report
                .send((format!("granted {name}"), Instant::now()));
        }
        grant
    }

    async fn try_acquire_request(
        &self,
        request: Request<'_>,
    ) -> Result<Option<Grant>, BackendError> {
        let _ = self.report.send((request.name.to_string(), Instant::now()));
        self.inner.try_acquire_request(request).await
    }

    fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        self.inner.release(grant)
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        self.inner.status(grant)
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        self.inner.status_changed(grant, seen)
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant, BackendError> {
        self.inner.downgrade(exclusive).await
    }

    async fn revocation_requested(&self, grant: GrantId) -> bool {
        self.inner.revocation_requested(grant).await
    }

    fn revoked(&self, grant: GrantId) -> Revoked {
        self.inner.revoked(grant)
    }

    async fn request_revocation(&self, name: &LockName) -> Result<u32, BackendError> {
        let _ = self.report.send((format!("revoke {name}"), Instant::now()));
        let asked = self.inner.request_revocation(name).await;
        let _ = self.report.send((format!("asked {name}"), Instant::now()));
        asked
    }
}

/// Waits, at most [`crate::TEST_WAIT_LIMIT`], for the request of `lock`;
/// returns when it arrived.
///
/// # Panics
/// When it does not come in time.
pub async fn wait_for(requests: &mut mpsc::UnboundedReceiver<Tapped>, lock: &str) -> Instant {
    let found = tokio::time::timeout(crate::TEST_WAIT_LIMIT, async {
        while let Some((name, at)) = requests.recv().await {
            if name == lock {
                return Some(at);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(at)) => at,
        _ => panic!("no request for {lock} within the test's wait limit"),
    }
}
