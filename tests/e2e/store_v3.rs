//! `wardlock:lock@0.3.0`'s `guarded` store and `election` through `lockctl3`
//! on the in-memory engine, beside 0.2.2 guests: 0.3 holders count in the
//! store and a 0.2.2 guest reads it; a 0.2.2 leader follows a 0.3 one (one
//! store, one election for both versions); a cancelled campaign leaves no
//! candidate; the SDK's 0.3 election and store (`leader3`; its revocation
//! is `lock_v3::an_sdk_holder_yields_when_asked`).
//! (Every 0.3 store and election call, and its refusals, is the
//! kit's `guest_v3_guarded_store` / `guest_v3_election`, run on every
//! engine: `conformance.rs`.)

use std::sync::Arc;

use wardlock_host::name::LockName;
use wardlock_host::runner::Runner;
use wardlock_host::{LockBackend, LockPolicy, MemoryBackend, Mode};
use wardlock_tests::{
    Guest, TEST_WAIT_LIMIT, assert_success, hold, lines, name, runner, spawn_run,
};

/// A guest's line `PREFIX N` as N.
fn number_after(line: &str, prefix: &str) -> u64 {
    line.strip_prefix(prefix)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {prefix:?} in {line:?}"))
}

/// A runner of `which` on `backend`, every instance bounded by the tests'
/// wait limit.
fn runner_of(which: Guest, backend: &MemoryBackend) -> Arc<Runner> {
    runner(which, backend, LockPolicy::new(), Some(TEST_WAIT_LIMIT))
}

/// The in-memory queue behind election `election`.
fn election_queue(election: &str) -> LockName {
    LockName::internal("election", &name(election))
}

/// Waits until election `election`'s queue has `leaders` leaders and
/// `waiting` candidates waiting.
async fn wait_candidates(backend: &MemoryBackend, election: &str, leaders: usize, waiting: usize) {
    let queue = election_queue(election);
    let counted = backend.wait_for(&queue, |q| {
        q.iter().filter(|e| e.token.is_some()).count() == leaders
            && q.iter().filter(|e| e.token.is_none()).count() == waiting
    });
    tokio::time::timeout(TEST_WAIT_LIMIT, counted)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "election {election} never had {leaders} leaders and {waiting} waiting: {:?}",
                backend.snapshot(&queue)
            )
        });
}

/// Two 0.3 instances count in one entry of the guarded store, each reading
/// and writing it under the lock 30 times: no update is lost. A 0.2.2 guest
/// then reads the entry the 0.3 ones wrote: one store for both versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_holders_count_in_the_store_and_v2_reads_it() {
    let backend = MemoryBackend::new();
    let guest = runner_of(Guest::Lockctl3, &backend);
    let counters = [
        spawn_run(&guest, 0, &["put-count", "tally", "n", "30"]),
        spawn_run(&guest, 1, &["put-count", "tally", "n", "30"]),
    ];
    for counter in counters {
        let report = counter.await.expect("guest task");
        assert_success(&report);
        assert_eq!(lines(&report), ["put-count: tally/n +30"]);
    }
    let v2 = runner_of(Guest::Lockctl2, &backend);
    let report = spawn_run(&v2, 0, &["read tally n"])
        .await
        .expect("0.2.2 guest task");
    assert_success(&report);
    let out = lines(&report);
    assert!(out[0].starts_with("60 token="), "no lost update: {out:?}");
}

/// A 0.3 guest's whole election (`elect`: it leads, writes the election's
/// store, resigns), then a 0.2.2 guest leads with a higher term and reads
/// the 0.3 leader's write: one election and one store for both versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_leader_follows_a_v3_one() {
    let backend = MemoryBackend::new();
    let guest = runner_of(Guest::Lockctl3, &backend);
    let report = spawn_run(&guest, 0, &["elect", "jobs"])
        .await
        .expect("guest task");
    assert_success(&report);
    // Every line is the kit's `guest_v3_election` check (run on memory
    // and every engine); here, what the 0.2.2 guest makes of it.
    let out = lines(&report);
    let term = number_after(&out[2], "leads term=");
    let v2 = runner_of(Guest::Lockctl2, &backend);
    let next = spawn_run(&v2, 0, &["campaign jobs beta -", "read jobs epoch"])
        .await
        .expect("0.2.2 guest task");
    assert_success(&next);
    let out = lines(&next);
    assert!(
        number_after(&out[0], "l1 term=") > term,
        "terms rise across versions: {out:?}"
    );
    assert!(
        out[1].starts_with(&format!("one token={term} ")),
        "the 0.2.2 leader reads the 0.3 leader's write: {out:?}"
    );
    assert_eq!(backend.active_names(), 0);
}

/// A campaign the guest drops while it waits behind a native leader leaves
/// no candidate: checked while the guest is still alive, so its instance's
/// end cannot be what withdrew it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_campaign_leaves_no_candidate() {
    let backend = MemoryBackend::new();
    let shared: Arc<dyn LockBackend> = Arc::new(backend.clone());
    let native = shared.open_session("native");
    let lead = native
        .election()
        .expect("election")
        .campaign(&name("post"), "native", Some(TEST_WAIT_LIMIT))
        .await
        .expect("the native candidate leads");
    let (gates, gate) = hold(&*shared, "gate", Mode::Exclusive).await;
    let last = gates
        .acquire(&name("gate-2"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("second gate");
    let guest = runner_of(Guest::Lockctl3, &backend);
    let run = spawn_run(&guest, 0, &["campaign-cancel", "post", "gate"]);
    wait_candidates(&backend, "post", 1, 1).await;
    gates.release(gate.id).expect("open the gate");
    wait_candidates(&backend, "post", 1, 0).await;
    native.release(lead.id).expect("resign");
    wait_candidates(&backend, "post", 0, 0).await;
    assert_eq!(
        native
            .election()
            .expect("election")
            .leader(&name("post"))
            .await
            .expect("leader"),
        None,
        "the cancelled candidate did not take over"
    );
    gates.release(last.id).expect("open the last gate");
    let report = run.await.expect("guest task");
    assert_success(&report);
    assert_eq!(lines(&report), ["campaign-cancel: gate first", "gate"]);
    assert_eq!(backend.active_names(), 0);
}

/// The SDK's 0.3 election and store (`leader3`): two instances campaign
/// for one election and, each while it leads, add one to the election's
/// store 20 times: the count is exact and their terms differ. Then an
/// observer's stream says that nobody leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_leaders_count_in_turn_in_the_election_s_store() {
    let backend = MemoryBackend::new();
    let guest = runner_of(Guest::Leader3, &backend);
    let leaders = [
        spawn_run(&guest, 0, &["lead", "nightly", "a", "20"]),
        spawn_run(&guest, 1, &["lead", "nightly", "b", "20"]),
    ];
    let mut terms = Vec::new();
    for (leader, value) in leaders.into_iter().zip(["a", "b"]) {
        let report = leader.await.expect("leader task");
        assert_success(&report);
        let out = lines(&report);
        let prefix = format!("lead: {value} +20 (term ");
        let term = out[0]
            .strip_prefix(&prefix)
            .and_then(|t| t.strip_suffix(')'))
            .and_then(|t| t.parse::<u64>().ok());
        terms.push(term.unwrap_or_else(|| panic!("{out:?}")));
    }
    assert_ne!(terms[0], terms[1], "each leader had a term of its own");
    let reader = backend.open_session("reader");
    let count = reader
        .guarded_store()
        .expect("guarded store")
        .guarded_get(
            &name("nightly"),
            &wardlock_host::backend::GuardedKey::new("count").expect("key"),
        )
        .await
        .expect("get")
        .expect("the leaders wrote the count");
    assert_eq!(count.value, b"40", "no lost update");
    let watch = spawn_run(&guest, 2, &["watch", "nightly", "1"])
        .await
        .expect("watcher task");
    assert_success(&watch);
    assert_eq!(lines(&watch), ["leader: none"]);
}
