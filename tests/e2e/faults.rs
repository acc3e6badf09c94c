//! Fault injection into the in-memory backend: a guest sees `suspended`,
//! `held` again and `lost` exactly as the embedder injects them, and an expired
//! grant's lock goes to the next waiter.

use wardlock_host::backend::memory::Fault;
use wardlock_host::{LockBackend, MemoryBackend, Mode};
use wardlock_tests::{TEST_WAIT_LIMIT, lines, name, spawn_lockctl, token_of, wait_queue};

use crate::cli::wardlock;

/// Waits until someone holds `lock`; returns the holder's owner description.
async fn holder_of(backend: &MemoryBackend, lock: &str) -> String {
    wait_queue(backend, lock, |q| q.iter().any(|e| e.token.is_some())).await;
    backend.snapshot(&name(lock))[0].owner.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_reach_the_guest_in_order() {
    let backend = MemoryBackend::new();
    // After each status it waits for, the guest takes an `ack` lock: the test
    // injects the next fault only once it has seen the previous one.
    let guest = spawn_lockctl(
        &backend,
        &[
            "acquire exclusive - f",
            "until 1 suspended 30000",
            "acquire exclusive - ack1",
            "until 1 held 30000",
            "acquire exclusive - ack2",
            "until 1 lost 30000",
            "release 1",
        ],
    );
    let owner = holder_of(&backend, "f").await;
    assert_eq!(backend.inject(&owner, Fault::Suspend), 1);
    holder_of(&backend, "ack1").await;
    backend.inject(&owner, Fault::Resume);
    holder_of(&backend, "ack2").await;
    backend.inject(&owner, Fault::Expire);
    // The expired grant no longer holds the lock.
    let next = backend.open_session("next");
    let grant = next
        .acquire(&name("f"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("the lock is free after the expiry");
    let report = guest.await.expect("guest");
    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    let out = lines(&report);
    assert_eq!(
        out[1..],
        [
            "became suspended",
            out[2].as_str(),
            "became held",
            out[4].as_str(),
            "became lost",
            "err lost",
        ]
    );
    assert!(grant.token > token_of(&out[0]), "{out:?}");
}

/// `wardlock run --fault`: the same, scheduled from the command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_flag_injects_a_scheduled_expiry() {
    let guest = wardlock_tests::Guest::Lockctl.path();
    // Without the expiry the guest would wait 60 s for `lost` and be stopped
    // by the 20 s timeout (exit code 1).
    let code = wardlock(&[
        "run",
        "--timeout",
        "20",
        "--fault",
        "expire@200",
        guest,
        "--",
        "acquire exclusive - f",
        "until 1 lost 60000",
        "release 1",
    ])
    .await
    .expect("run");
    assert_eq!(code, 0);
    let refused = wardlock(&[
        "run",
        "--zookeeper",
        "127.0.0.1:1",
        "--fault",
        "expire@1",
        guest,
    ])
    .await;
    let error = refused.expect_err("faults need the memory backend");
    assert!(error.to_string().contains("memory backend"), "{error}");
}
