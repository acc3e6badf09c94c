//! The checks through real guest components (feature `guests`): the kit's
//! `counter` and `lockctl` guests, run by `wardlock-host` on wasmtime, lock
//! on the engine under test.

use wardlock_backend::Mode;
use wardlock_host::runner::Outcome;

use crate::{
    KitGuest, Subject, TEST_WAIT_LIMIT, assert_success, lines, name, run_instances, spawn_run,
    token_of,
};

use super::{queued, skipped};

/// Eight counter guests on one lock lose no update.
pub(super) async fn guest_counter_is_exact(s: &Subject) {
    let dir = tempfile::tempdir().expect("temp dir");
    let runner = KitGuest::Counter.runner(s.backend.clone(), Some(dir.path()), None);
    let reports = run_instances(&runner, 8, &["conf/counter", "20", "/data/count"]).await;
    reports.iter().for_each(assert_success);
    let count = std::fs::read_to_string(dir.path().join("count")).expect("count file");
    assert_eq!(count.trim(), "160");
    s.wait_len("conf/counter", 0).await;
}

/// A guest trapping while holding hands its lock to a native waiter.
pub(super) async fn guest_trap_hands_over(s: &Subject) {
    let gate_session = s.backend.open_session("gate");
    let gate = gate_session
        .acquire(&name("conf/gate"), Mode::Exclusive, None)
        .await
        .expect("gate");
    let guest = spawn_run(
        &KitGuest::Lockctl.runner(s.backend.clone(), None, Some(TEST_WAIT_LIMIT)),
        0,
        &[
            "acquire exclusive - conf/trap",
            "acquire exclusive - conf/gate",
            "trap",
        ],
    );
    s.wait_len("conf/gate", 2).await;
    let waiter = queued(s, "waiter", "conf/trap", Mode::Exclusive, 2).await;
    gate_session.release(gate.id).expect("open the gate");
    let report = guest.await.expect("guest task");
    crate::assert_outcome!(report, Outcome::Trap(_));
    let (_session, grant) = waiter.await.expect("waiter task");
    assert!(grant.is_ok(), "{grant:?}");
}

/// The WIT semantics a guest sees do not depend on the backend.
/// (It downgrades: skipped on an engine without downgrade.)
pub(super) async fn guest_sees_wit_semantics(s: &Subject) {
    if !s.downgrades().await {
        return skipped("guest_sees_wit_semantics", "downgrade");
    }
    let runner = KitGuest::Lockctl.runner(s.backend.clone(), None, Some(TEST_WAIT_LIMIT));
    let script = [
        "acquire exclusive - conf/sem",
        "acquire exclusive 0 conf/sem",
        "acquire shared - conf/sem",
        "release 1",
        "release 1",
        "status 2",
        "acquire shared - conf/sem-r",
        "acquire exclusive - conf/sem-r",
        "try exclusive conf/sem-r",
        "acquire exclusive - a//b",
        "try shared conf/sem-free",
    ];
    let args: Vec<String> = script.iter().map(|a| a.to_string()).collect();
    let report = runner.run(0, &args).await;
    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    let out = lines(&report);
    assert_eq!(token_of(&out[0]), token_of(&out[1]));
    // A downgrade is a new, shared grant: its token exceeds the exclusive one's.
    assert!(token_of(&out[2]) > token_of(&out[0]), "{out:?}");
    assert_eq!(out[3..6], ["ok", "err released", "held"]);
    assert!(out[6].starts_with("h4 "), "{out:?}");
    assert_eq!(out[7..9], ["err would-deadlock", "err would-deadlock"]);
    assert!(out[9].starts_with("err invalid-name: "), "{out:?}");
    assert!(out[10].starts_with("h5 "), "{out:?}");
    for lock in ["conf/sem", "conf/sem-r", "conf/sem-free"] {
        s.wait_len(lock, 0).await;
    }
}
