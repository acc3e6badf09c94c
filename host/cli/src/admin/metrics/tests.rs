//! Unit tests of the metered session.

use super::*;
use wardlock_host::backend::memory::MemoryBackend;
use wardlock_host::name::LockName;

/// A semaphore permit goes through the metered session (the wrapper
/// forwards every kind of request) and is counted with `mode="permit"`.
#[tokio::test]
async fn a_permit_is_counted_apart_from_locks() {
    let metrics = Metrics::new();
    let backend = Metered::backend(Arc::new(MemoryBackend::new()), "p", metrics.clone());
    let session = backend.open_session("t");
    let name = LockName::new("pool").expect("valid name");
    let permit = session
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&name, 2, None)
        .await
        .expect("a permit through the metered session");
    session
        .acquire(
            &LockName::new("l").expect("valid name"),
            Mode::Exclusive,
            None,
        )
        .await
        .expect("a lock");
    session.release(permit.id).expect("held");
    let text = metrics.encode();
    for line in [
        r#"wardlock_grants_total{plugin="p",mode="permit"} 1"#,
        r#"wardlock_grants_total{plugin="p",mode="exclusive"} 1"#,
        r#"wardlock_hold_seconds_count{plugin="p",mode="permit"} 1"#,
    ] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
}

/// Histogram bounds print as written, not as float arithmetic left them.
#[tokio::test]
async fn histogram_bounds_print_as_written() {
    let metrics = Metrics::new();
    let backend = Metered::backend(Arc::new(MemoryBackend::new()), "p", metrics.clone());
    let session = backend.open_session("t");
    let name = LockName::new("l").expect("valid name");
    session
        .acquire(&name, Mode::Exclusive, None)
        .await
        .expect("a lock");
    let text = metrics.encode();
    assert!(
        text.contains(r#"le="0.0003""#),
        "no le=\"0.0003\" in:\n{text}"
    );
    let long = text
        .lines()
        .filter(|line| line.contains("le=\""))
        .find(|line| line.contains("0000000"));
    assert_eq!(long, None, "a bound printed with float noise");
}
