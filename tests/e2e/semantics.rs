//! The lock interface's semantics as seen by a guest written only against the WIT
//! (`lockctl`): re-entrancy, downgrade, would-deadlock, bad input, grants, caps.

use wardlock_host::{LockPolicy, MemoryBackend, Mode};
use wardlock_tests::{Gated, lines, lockctl, lockctl_with, name, token_of};

/// Acquiring a held name again gives another handle on the same grant; the lock
/// goes only with the last handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_is_reentrant_per_instance() {
    let backend = MemoryBackend::new();
    // Parked on `gate` after releasing handle 1: handle 2 still holds `r`.
    let gated = Gated::park(
        &backend,
        &[
            "acquire exclusive - r",
            "acquire exclusive - r",
            "release 1",
            "status 1",
            "status 2",
            "acquire exclusive - gate",
            "release 2",
            "status 2",
        ],
    )
    .await;
    assert_eq!(
        try_take(&*gated.native, "r").await,
        None,
        "`r` was released with a handle still open"
    );
    let report = gated.open().await;
    let out = lines(&report);
    assert_eq!(
        token_of(&out[0]),
        token_of(&out[1]),
        "same grant, same token: {out:?}"
    );
    assert_eq!(out[2..5], ["ok", "released", "held"]);
    assert_eq!(out[6..], ["ok", "released"]);
    assert!(backend.snapshot(&name("r")).is_empty());
}

/// Tries to take `lock` without waiting; `Some(token)` if it was free.
async fn try_take(session: &dyn wardlock_host::LockSession, lock: &str) -> Option<u64> {
    let grant = session
        .try_acquire(&name(lock), Mode::Exclusive)
        .await
        .unwrap()?;
    session.release(grant.id).unwrap();
    Some(grant.token)
}

/// Shared while holding exclusive is granted at once and keeps the lock after the
/// exclusive handle goes (downgrade).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_while_exclusive_is_a_downgrade() {
    let backend = MemoryBackend::new();
    let report = lockctl(
        &backend,
        &[
            "acquire exclusive - d",
            "acquire shared 0 d",
            "mode 2",
            "release 1",
            "status 2",
            "try shared d",
        ],
    )
    .await;
    let out = lines(&report);
    // A downgrade is a new, shared grant: its token exceeds the exclusive one's.
    assert!(token_of(&out[1]) > token_of(&out[0]), "{out:?}");
    assert_eq!(out[2..5], ["shared", "ok", "held"]);
    assert!(out[5].starts_with("h3 token="), "{out:?}");
}

/// Exclusive while holding only shared would wait on itself: `would-deadlock`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_is_refused_not_hung() {
    let backend = MemoryBackend::new();
    let report = lockctl(
        &backend,
        &[
            "acquire shared - u",
            "acquire exclusive - u",
            "try exclusive u",
            "acquire shared - u",
        ],
    )
    .await;
    let out = lines(&report);
    assert!(report.outcome.is_success());
    assert_eq!(out[1..3], ["err would-deadlock", "err would-deadlock"]);
    assert!(out[3].starts_with("h2 "), "{out:?}");
}

/// Bad names get `invalid-name` with a reason; the guest keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_names_are_errors_not_traps() {
    let backend = MemoryBackend::new();
    let long = format!("acquire exclusive - {}", "x".repeat(256));
    let report = lockctl(
        &backend,
        &[
            "acquire exclusive - ",
            "acquire exclusive - ../etc",
            "acquire exclusive - a//b",
            "try shared /abs",
            "try shared a b",
            "try shared a:b",
            "try shared zk\u{e9}",
            &long,
            "acquire exclusive - fine/name-1.x_y",
        ],
    )
    .await;
    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    let out = lines(&report);
    for line in &out[..8] {
        assert!(line.starts_with("err invalid-name: "), "{line}");
    }
    assert!(out[0].contains("empty"));
    assert!(out[1].contains("\"..\""));
    assert!(out[7].contains("256 bytes"));
    assert!(out[8].starts_with("h1 "), "{:?}", out[8]);
    assert_eq!(backend.active_names(), 0);
}

/// Names outside the plugin's grants are `denied`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_outside_grants_are_denied() {
    let backend = MemoryBackend::new();
    let policy = LockPolicy::new().grant("orders").unwrap();
    let report = lockctl_with(
        &backend,
        policy,
        None,
        &[
            "acquire exclusive - orders/eu",
            "acquire exclusive - ordersx",
            "try shared jobs",
        ],
    )
    .await;
    let out = lines(&report);
    assert!(out[0].starts_with("h1 "), "{out:?}");
    assert_eq!(
        out[1],
        "err denied: lock \"ordersx\" is not granted to this plugin"
    );
    assert!(out[2].starts_with("err denied: "), "{out:?}");
}

/// A guest hoarding handles hits the per-instance cap with `limit-exceeded`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handle_cap_is_enforced() {
    let backend = MemoryBackend::new();
    let policy = LockPolicy::new().with_max_handles(50);
    let report = lockctl_with(
        &backend,
        policy,
        None,
        &["hoard shared h", "drop 1", "try shared h"],
    )
    .await;
    let out = lines(&report);
    assert!(
        out[0].starts_with("hoarded 50 err limit-exceeded: "),
        "{out:?}"
    );
    assert!(
        out[2].starts_with("h51 "),
        "dropping one handle makes room: {out:?}"
    );

    let guest = wardlock_tests::runner(
        wardlock_tests::Guest::Misbehave,
        &backend,
        LockPolicy::new().with_max_handles(3000),
        None,
    );
    let report = guest.run(0, &["hoard".into(), "h".into()]).await;
    assert!(
        report.stdout_text().starts_with("hoarded 3000: "),
        "{}",
        report.stdout_text()
    );
    assert_eq!(backend.active_names(), 0);
}

/// Releasing twice gives `released`; status follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_release_is_an_error() {
    let backend = MemoryBackend::new();
    let report = lockctl(
        &backend,
        &[
            "acquire exclusive - x",
            "release 1",
            "release 1",
            "status 1",
            "name 1",
            "token 7",
        ],
    )
    .await;
    let out = lines(&report);
    assert_eq!(
        out[1..],
        ["ok", "err released", "released", "x", "err no-such-handle"]
    );
}
