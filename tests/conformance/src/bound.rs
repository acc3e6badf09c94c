//! The bound on every check: a check that has not finished within its
//! subject's [`Subject::check_limit`] fails, naming the check, the engine
//! and the last thing the check waited for, with the server's state as the
//! subject's [`Subject::server_state`] dumps it. Without it a check that
//! waits for something that never comes (an `acquire` without a timeout, a
//! task's answer) hangs its test run with nothing to say where.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Subject;

/// How long one check may take by default: its own waits are bounded by
/// [`TEST_WAIT_LIMIT`](crate::TEST_WAIT_LIMIT) each, a check makes a few,
/// and a check that needs more than this waits for something it will not
/// get.
pub const CHECK_LIMIT: Duration = Duration::from_secs(120);

/// How long the server's state dump may take once a check ran out of time.
const DUMP_LIMIT: Duration = Duration::from_secs(10);

/// A dump of the lock service's state (its lock nodes, keys, `pg_locks`), as
/// text: what a failed bound shows beside the check's name.
pub type StateDump = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = String> + Send>> + Send + Sync>;

/// What the running check waits for now (set by [`Subject::wait_len`] and
/// [`Subject::waiting_for`]), shown when its bound runs out.
#[derive(Default)]
pub(crate) struct LastWait(Mutex<Option<String>>);

impl LastWait {
    pub(crate) fn set(&self, what: String) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(what);
    }

    fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Runs `check` (named `name`) on `subject` within its bound.
///
/// # Panics
/// When the check fails, or runs past [`Subject::check_limit`]: then the
/// message names the check, the engine, the last wait and the server's
/// state.
pub(crate) async fn run_bounded(subject: &Subject, name: &str, check: impl Future<Output = ()>) {
    eprintln!("conformance: {name}");
    subject.last_wait.take();
    if tokio::time::timeout(subject.check_limit, check)
        .await
        .is_ok()
    {
        return;
    }
    let waited_for = subject
        .last_wait
        .take()
        .unwrap_or_else(|| "nothing the kit named (a call of the engine)".to_owned());
    let state = match &subject.server_state {
        Some(dump) => tokio::time::timeout(DUMP_LIMIT, dump())
            .await
            .unwrap_or_else(|_| format!("(the dump itself took more than {DUMP_LIMIT:?})")),
        None => "(none: the suite gave its subject no `server_state`)".to_owned(),
    };
    panic!(
        "conformance check `{name}` on the `{}` engine did not finish within {:?}; \
         the last wait it named: {waited_for}; the server's state:\n{state}",
        subject.backend.kind(),
        subject.check_limit,
    );
}
