//! Small helpers of the checks, public so a test suite of an engine can use
//! them beside the kit (wardlock's own suite does).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use wardlock_host::runner::{InstanceReport, Runner};
use wardlock_host::{BackendError, Grant, LockBackend, LockName, LockSession, Mode};

/// The longest a check waits for something it expects (a grant, a queue or
/// session state, a guest's end) before failing: a hang guard, not a
/// synchronisation.
pub const TEST_WAIT_LIMIT: Duration = Duration::from_secs(30);

/// The lines a guest printed.
pub fn lines(report: &InstanceReport) -> Vec<String> {
    report.stdout_text().lines().map(str::to_owned).collect()
}

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

/// Runs instance `instance` of `runner` with `args` on a task of its own.
pub fn spawn_run(
    runner: &Arc<Runner>,
    instance: usize,
    args: &[&str],
) -> JoinHandle<InstanceReport> {
    let runner = runner.clone();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::spawn(async move { runner.run(instance, &args).await })
}

/// Runs `instances` instances of `runner` at once with `args`; their reports
/// in instance order.
pub async fn run_instances(
    runner: &Arc<Runner>,
    instances: usize,
    args: &[&str],
) -> Vec<InstanceReport> {
    let tasks: Vec<_> = (0..instances).map(|i| spawn_run(runner, i, args)).collect();
    let mut reports = Vec::with_capacity(instances);
    for task in tasks {
        reports.push(task.await.expect("instance task"));
    }
    reports
}

/// Fails unless the instance succeeded, showing its output.
pub fn assert_success(report: &InstanceReport) {
    assert!(
        report.outcome.is_success(),
        "{:?}\nstdout: {}\nstderr: {}",
        report.outcome,
        report.stdout_text(),
        report.stderr_text()
    );
}

/// Fails unless the instance's outcome matches `$pattern`, showing its stderr.
#[macro_export]
macro_rules! assert_outcome {
    ($report:expr, $pattern:pat) => {{
        let report = &$report;
        assert!(
            matches!(report.outcome, $pattern),
            "{:?}: {}",
            report.outcome,
            report.stderr_text()
        );
    }};
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
