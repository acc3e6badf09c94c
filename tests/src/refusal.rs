//! A connect that must be refused: at start, quickly, as a refusal (not
//! `unavailable`), so an operator is told what to fix instead of waiting on
//! retries.

use std::future::Future;
use std::time::{Duration, Instant};

use wardlock_host::BackendError;

/// How soon a refusal must come.
pub const REFUSAL_BOUND: Duration = Duration::from_secs(5);

/// Awaits `connect`, which must fail with [`BackendError::Refused`] within
/// [`REFUSAL_BOUND`]; the error's text.
///
/// # Panics
/// When it connects, fails otherwise, or takes longer.
pub async fn refused<T>(connect: impl Future<Output = Result<T, BackendError>>) -> String {
    let started = Instant::now();
    let error = match connect.await {
        Ok(_) => panic!("connected where it must be refused"),
        Err(error) => error,
    };
    assert!(
        started.elapsed() < REFUSAL_BOUND,
        "refused after {:?}",
        started.elapsed()
    );
    assert!(matches!(error, BackendError::Refused(_)), "{error:?}");
    error.to_string()
}
