//! Guests that await locks on an event loop: while one task of a guest awaits
//! a lock, another task of the same guest keeps running (issue 25). Each
//! language's variant runs the same scenario on the memory backend, observed
//! as events:
//!
//! 1. a native session holds both locks, FIRST and SECOND;
//! 2. the guest's two tasks request FIRST and SECOND: both queue at once (a
//!    blocking wait for FIRST would never let the request for SECOND out);
//! 3. SECOND is released: its task is served and ends while the other still
//!    waits for FIRST;
//! 4. FIRST is released: the guest ends, having printed SECOND's grant first.

use wardlock_host::{LockPolicy, MemoryBackend, Mode};
use wardlock_tests::{
    Guest, TEST_WAIT_LIMIT, assert_success, hold, lines, runner, spawn_run, wait_counts,
};

async fn one_task_runs_while_another_awaits(guest: Guest) {
    let backend = MemoryBackend::new();
    let (first_holder, first) = hold(&backend, "async/first", Mode::Exclusive).await;
    let (second_holder, second) = hold(&backend, "async/second", Mode::Exclusive).await;
    let run = spawn_run(
        &runner(guest, &backend, LockPolicy::new(), Some(TEST_WAIT_LIMIT)),
        0,
        &["async/first", "async/second"],
    );
    // Both requests queue while the guest is still running.
    wait_counts(&backend, "async/first", 1, 1).await;
    wait_counts(&backend, "async/second", 1, 1).await;
    second_holder.release(second.id).expect("release second");
    // The second task is served and lets go; the first still waits.
    wait_counts(&backend, "async/second", 0, 0).await;
    wait_counts(&backend, "async/first", 1, 1).await;
    assert!(
        !run.is_finished(),
        "the guest ended before its first lock came"
    );
    first_holder.release(first.id).expect("release first");
    let report = run.await.expect("guest task");
    assert_success(&report);
    let out = lines(&report);
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out[0].starts_with("b holds async/second token="), "{out:?}");
    assert!(out[1].starts_with("a holds async/first token="), "{out:?}");
}

/// Rust: `wardlock_guest` with feature `async`, `Pending` awaited on wstd.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_task_runs_while_another_awaits_a_lock() {
    one_task_runs_while_another_awaits(Guest::AsyncTasks).await;
}

/// Python: `wardlock_asyncio`'s loop over `wasi:io/poll`, `async with` and
/// `asyncio.gather`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_task_runs_while_another_awaits_a_lock() {
    one_task_runs_while_another_awaits(Guest::AsyncPython).await;
}

/// JavaScript: `acquireAwait` (`Pending.result`, `whenReady`) under
/// `Promise.all`, on componentize-js's event loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_task_runs_while_another_awaits_a_lock() {
    one_task_runs_while_another_awaits(Guest::AsyncJs).await;
}

/// JavaScript: `acquireAwait` with an abort signal (the Web Locks option).
/// A third task queues for a held lock beside the scenario's two; once they
/// are done the guest aborts its signal: the wait is withdrawn while the
/// guest lives on (seen parked at a gate) and the promise rejects with the
/// signal's reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_abort_signal_withdraws_an_awaited_wait() {
    let backend = MemoryBackend::new();
    let locks = ["abort/first", "abort/second", "abort/aborted", "abort/gate"];
    let mut held = Vec::new();
    for lock in locks {
        held.push(hold(&backend, lock, Mode::Exclusive).await);
    }
    let run = spawn_run(
        &runner(
            Guest::AsyncJs,
            &backend,
            LockPolicy::new(),
            Some(TEST_WAIT_LIMIT),
        ),
        0,
        &locks,
    );
    for lock in &locks[..3] {
        wait_counts(&backend, lock, 1, 1).await;
    }
    let [(first_holder, first), (second_holder, second), ..] = &held[..] else {
        unreachable!("four locks held")
    };
    second_holder.release(second.id).expect("release second");
    first_holder.release(first.id).expect("release first");
    // Aborted: the third wait is gone, and the guest waits at the gate.
    wait_counts(&backend, "abort/aborted", 1, 0).await;
    wait_counts(&backend, "abort/gate", 1, 1).await;
    assert!(!run.is_finished(), "the guest waits at the gate");
    let (gate_holder, gate) = &held[3];
    gate_holder.release(gate.id).expect("open the gate");
    let report = run.await.expect("guest task");
    assert_success(&report);
    let out = lines(&report);
    assert_eq!(out.len(), 4, "{out:?}");
    assert_eq!(out[2], "c gave up: aborted by the guest", "{out:?}");
    assert_eq!(out[3], "gate passed", "{out:?}");
}
