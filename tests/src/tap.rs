//! A backend wrapper that reports each lock request of its sessions, with the
//! instant the host received it, before passing it on: how a test learns when
//! a guest acted, on a backend it cannot observe as events (ZooKeeper).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use wardlock_host::backend::Request;
use wardlock_host::backend::observe::{
    Admission, BackendObserver, ObservedBackend, SessionObserver,
};
use wardlock_host::{BackendError, Grant, LockBackend, LockName};

/// One request seen by a [`Tap`]: the lock name and when it arrived; an
/// `acquire` that succeeds is reported again as `granted <name>`, a
/// revocation request as `revoke <name>` when it arrives and `asked <name>`
/// when the backend answered it.
pub type Tapped = (String, Instant);

/// Reports the requests of a backend's sessions; wrap a backend with
/// [`Tap::new`].
pub struct Tap {
    report: mpsc::UnboundedSender<Tapped>,
}

impl Tap {
    /// Wraps `inner`; the receiver gets every `acquire`, `try_acquire` and
    /// `request_revocation`, reported before it is passed on.
    pub fn new(
        inner: Arc<dyn LockBackend>,
    ) -> (Arc<ObservedBackend<Tap>>, mpsc::UnboundedReceiver<Tapped>) {
        let (report, requests) = mpsc::unbounded_channel();
        (
            Arc::new(ObservedBackend::new(inner, Tap { report })),
            requests,
        )
    }

    fn send(&self, event: String) {
        let _ = self.report.send((event, Instant::now()));
    }
}

impl BackendObserver for Tap {
    type Session = Tap;

    fn session(&self, _owner: &str) -> Tap {
        Tap {
            report: self.report.clone(),
        }
    }
}

impl SessionObserver for Tap {
    fn admit(&self, request: Request<'_>, _waits: bool) -> Result<Admission, BackendError> {
        self.send(request.name.to_string());
        Ok(Admission::default())
    }

    /// An `acquire` that succeeds is reported again (a try is not).
    fn granted(&self, request: Request<'_>, _grant: &Grant, waited: Option<Duration>) {
        if waited.is_some() {
            self.send(format!("granted {}", request.name));
        }
    }

    fn revocation_asked(&self, name: &LockName) {
        self.send(format!("revoke {name}"));
    }

    fn revocation_answered(&self, name: &LockName, _answer: &Result<u32, BackendError>) {
        self.send(format!("asked {name}"));
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
