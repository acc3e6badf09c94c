//! Small helpers of the checks, public so a test suite of an engine can use
//! them beside the kit (wardlock's own suite does).

use std::time::Duration;

use tokio::task::JoinHandle;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Grant, LockBackend, LockSession, Mode};

/// The longest a check waits for something it expects (a grant, a queue or
/// session state, a guest's end) before failing: a hang guard, not a
/// synchronisation.
pub const TEST_WAIT_LIMIT: Duration = Duration::from_secs(30);

/// Parses `h<N> token=<T>` and returns T.
///
/// # Panics
/// When `line` carries no token.
pub fn token_of(line: &str) -> u64 {
    line.split_once("token=")
        .and_then(|(_, t)| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no token in {line:?}"))
}

/// A lock name the checks use (always valid).
///
/// # Panics
/// When `s` is not a valid lock name.
pub fn name(s: &str) -> LockName {
    LockName::new(s).expect("valid test lock name")
}

/// Takes `lock` in `mode` natively on a fresh session of `backend`.
///
/// # Panics
/// When it is not granted within [`TEST_WAIT_LIMIT`].
pub async fn hold(
    backend: &dyn LockBackend,
    lock: &str,
    mode: Mode,
) -> (Box<dyn LockSession>, Grant) {
    let session = backend.open_session("test");
    let grant = session
        .acquire(&name(lock), mode, Some(TEST_WAIT_LIMIT))
        .await
        .unwrap_or_else(|e| panic!("taking {lock} natively: {e}"));
    (session, grant)
}

/// A native acquisition's session and result.
pub type Acquired = (Box<dyn LockSession>, Result<Grant, BackendError>);

/// Acquires `lock` in `mode` on `session` in a task (bounded by
/// [`TEST_WAIT_LIMIT`]).
pub fn spawn_acquire(
    session: Box<dyn LockSession>,
    lock: &str,
    mode: Mode,
) -> JoinHandle<Acquired> {
    let lock = name(lock);
    tokio::spawn(async move {
        let grant = session.acquire(&lock, mode, Some(TEST_WAIT_LIMIT)).await;
        (session, grant)
    })
}
