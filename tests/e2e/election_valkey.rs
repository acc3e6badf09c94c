//! Leader election on Valkey/Redis (issue 51; `host/valkey/src/election.rs`):
//! the guest calls, a lock and an election of one name in one queue, a
//! candidate beside its own host's cached lock node, and an observer that
//! learns of a leader whose host went silent with no event to tell it. The
//! conformance kit's election check runs on both servers
//! (`valkey::*_backend_conforms`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::backend::handoff::LocalHandoff;
use wardlock_host::{BackendError, GrantStatus, LockBackend, Mode};
use wardlock_tests::proxy::Proxy;
use wardlock_tests::redis_server::{Flavor, RedisServer};
use wardlock_tests::{TEST_WAIT_LIMIT, name};
use wardlock_valkey::{ValkeyBackend, ValkeyConfig};

use crate::election::election_calls_through_a_guest;

/// A host on `url` with 2 s sessions and `handoff`.
async fn host(url: &str, handoff: LocalHandoff) -> ValkeyBackend {
    let config = ValkeyConfig::new(url)
        .session_timeout(Duration::from_secs(2))
        .local_handoff(handoff);
    ValkeyBackend::connect(config).await.expect("valkey host")
}

/// Every key under the default root, sorted.
fn keys(server: &RedisServer) -> Vec<String> {
    let mut keys = server.keys("/wardlock/*");
    keys.sort();
    keys
}

/// Waits (bounded) until nothing of elections or queues is left (the
/// observers' registrations expire by themselves).
async fn wait_clean(server: &RedisServer) {
    let started = Instant::now();
    loop {
        let left: Vec<String> = keys(server)
            .into_iter()
            .filter(|k| k.contains("%queue") || k.contains("%value"))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "left on the server: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_election_calls_through_a_guest_on_valkey() {
    let server = RedisServer::start(Flavor::Redis);
    let backend: Arc<dyn LockBackend> =
        Arc::new(host(&server.url(), LocalHandoff::default()).await);
    election_calls_through_a_guest(backend.clone()).await;
    backend.shutdown().await;
    wait_clean(&server).await;
}

/// A lock holder of NAME leads election NAME with an empty value; a
/// campaign dropped while it waits leaves no member and no value; a
/// leadership has no shared form; a candidate's member goes with its
/// session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_and_an_election_of_one_name_share_a_queue() {
    let server = RedisServer::start(Flavor::Redis);
    let backend = host(&server.url(), LocalHandoff::default()).await;
    let shared_name = name("shared");
    let holder = backend.open_session("holder");
    let lock = holder
        .acquire(&shared_name, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("lock");
    let candidate = backend.open_session("candidate");
    let leader = candidate
        .election()
        .expect("election")
        .leader(&shared_name)
        .await
        .expect("leader")
        .expect("the lock's holder stands first");
    assert_eq!(leader.value, "", "a lock's member proclaims nothing");
    {
        let campaign = candidate
            .election()
            .expect("election")
            .campaign(&shared_name, "c", None);
        let waited = tokio::time::timeout(Duration::from_millis(200), campaign).await;
        assert!(waited.is_err(), "the candidate waits for the lock");
    }
    let started = Instant::now();
    while backend.queued(&shared_name).await.expect("queue").len() != 1
        || keys(&server).iter().any(|k| k.contains("%value"))
    {
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "the dropped campaign left {:?}",
            keys(&server)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    holder.release(lock.id).expect("release");
    let won = candidate
        .election()
        .expect("election")
        .campaign(&shared_name, "c", Some(TEST_WAIT_LIMIT))
        .await
        .expect("leads once the lock is free");
    assert!(won.token > lock.token, "{} then {}", lock.token, won.token);
    let refused = candidate.downgrade(won.id).await;
    assert!(
        matches!(refused, Err(BackendError::InvalidRequest(_))),
        "{refused:?}"
    );
    let refused = holder
        .election()
        .expect("election")
        .proclaim(won.id, "not mine")
        .await;
    assert!(
        matches!(refused, Err(BackendError::UnknownGrant(_))),
        "{refused:?}"
    );
    drop(candidate);
    wait_clean(&server).await;
    backend.shutdown().await;
}

/// A host keeps its lock node after the last local release (lock caching,
/// here for a minute) until another host's member queues behind it. A
/// candidate of the same host is not a share of that node: it counts as
/// another host's, so it leads as soon as the lock is released, not when
/// the cache runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_leads_past_its_own_host_s_cached_lock() {
    let server = RedisServer::start(Flavor::Redis);
    let caching = LocalHandoff {
        linger: Duration::from_secs(60),
        ..LocalHandoff::cached()
    };
    let backend = Arc::new(host(&server.url(), caching).await);
    let jobs = name("jobs");
    let holder = backend.open_session("holder");
    let lock = holder
        .acquire(&jobs, Mode::Exclusive, None)
        .await
        .expect("lock");
    let campaign = {
        let backend = backend.clone();
        let jobs = jobs.clone();
        tokio::spawn(async move {
            let candidate = backend.open_session("candidate");
            let won = candidate
                .election()
                .expect("election")
                .campaign(&jobs, "leader", Some(TEST_WAIT_LIMIT))
                .await;
            (candidate, won)
        })
    };
    let started = Instant::now();
    while backend.queued(&jobs).await.expect("queue").len() != 2 {
        assert!(started.elapsed() < TEST_WAIT_LIMIT, "the candidate queued");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    holder.release(lock.id).expect("release");
    let (candidate, won) = campaign.await.expect("campaign task");
    let won = won.expect("the candidate leads once the lock is released");
    assert_eq!(candidate.status(won.id), GrantStatus::Held);
    candidate.release(won.id).expect("resign");
    drop(candidate);
    backend.shutdown().await;
    wait_clean(&server).await;
}

/// A leader's host cut off by a proxy that stops forwarding: no script runs
/// to tell anyone, yet an observer on another host learns of the change
/// once the leader's session key expired, the leader was told `lost`
/// before that, and the next candidate leads with a higher term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_learns_of_a_silent_leader_s_end() {
    let server = RedisServer::start(Flavor::Redis);
    let proxy = Proxy::start(format!("127.0.0.1:{}", server.port())).await;
    let cut_off = host(
        &format!("redis://{}", proxy.address()),
        LocalHandoff::default(),
    )
    .await;
    let other = Arc::new(host(&server.url(), LocalHandoff::default()).await);
    let jobs = name("jobs");
    let leader_session: Arc<dyn wardlock_host::LockSession> =
        Arc::from(cut_off.open_session("leader"));
    let lead = leader_session
        .election()
        .expect("election")
        .campaign(&jobs, "first", Some(TEST_WAIT_LIMIT))
        .await
        .expect("the first candidate leads");
    let observer = other.open_session("observer");
    let seen = observer
        .election()
        .expect("election")
        .leader(&jobs)
        .await
        .expect("leader")
        .expect("one");
    assert_eq!((seen.value.as_str(), seen.term), ("first", lead.token));
    let next = {
        let (other, jobs) = (other.clone(), jobs.clone());
        let (old, old_lead) = (leader_session.clone(), lead.id);
        tokio::spawn(async move {
            let candidate = other.open_session("next");
            let won = candidate
                .election()
                .expect("election")
                .campaign(&jobs, "second", Some(TEST_WAIT_LIMIT))
                .await;
            // Read at once: what the old leader would be told as the new
            // one leads.
            let old_status = old.status(old_lead);
            (candidate, won, old_status)
        })
    };
    let change = observer
        .election()
        .expect("election")
        .leader_changed(&jobs, Some(seen.clone()));
    let mut lost = leader_session.status_changed(lead.id, GrantStatus::Held);
    proxy.partition(true);
    let cut = Instant::now();
    let changed = tokio::time::timeout(TEST_WAIT_LIMIT, change)
        .await
        .expect("the observer heard in time")
        .expect("leader_changed")
        .expect("the next candidate leads");
    let heard = cut.elapsed();
    assert_eq!(changed.value, "second");
    assert!(changed.term > seen.term, "{changed:?} after {seen:?}");
    // The old leader's own clock: suspended, then lost.
    let status = tokio::time::timeout(TEST_WAIT_LIMIT, async {
        let mut status = lost.await;
        while status == GrantStatus::Suspended {
            lost = leader_session.status_changed(lead.id, status);
            status = lost.await;
        }
        status
    })
    .await
    .expect("the old leader heard");
    assert_eq!(status, GrantStatus::Lost);
    // Not before the key expired (the next candidate leads only then), and
    // not a whole test limit later: the observer looked again when the
    // silent leader's key would expire.
    assert!(
        heard < Duration::from_secs(2 + 3),
        "the observer heard {heard:?} after the cut (2 s sessions)"
    );
    let (candidate, won, old_status) = next.await.expect("campaign task");
    let won = won.expect("the next candidate leads");
    assert_eq!(won.token, changed.term);
    assert_eq!(
        old_status,
        GrantStatus::Lost,
        "the old leader's status as the next one was granted"
    );
    candidate.release(won.id).expect("resign");
    drop(candidate);
    other.shutdown().await;
    wait_clean(&server).await;
}

/// With 60 s sessions an observer's own timer would look again only after
/// a minute: a first candidate, a proclaimed value and a resignation reach
/// an observer on another host within the test's limit (30 s) only because
/// the scripts that made them told its host (`leader NAME`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observers_on_another_host_are_told_each_change() {
    let server = RedisServer::start(Flavor::Redis);
    let long = |url: String| async move {
        let config = ValkeyConfig::new(url).session_timeout(Duration::from_secs(60));
        ValkeyBackend::connect(config).await.expect("valkey host")
    };
    let watching = long(server.url()).await;
    let leading = long(server.url()).await;
    let jobs = name("jobs");
    let observer = watching.open_session("observer");
    let elections = observer.election().expect("election");
    let next = |seen| {
        let change = elections.leader_changed(&jobs, seen);
        async move {
            tokio::time::timeout(TEST_WAIT_LIMIT, change)
                .await
                .expect("told within the test's limit")
                .expect("leader_changed")
        }
    };
    let first = tokio::spawn(next(None));
    let started = Instant::now();
    while server.cli(&["SCARD", "/wardlock/%observers/jobs"]).trim() != "1" {
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "the observer registered"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let candidate = leading.open_session("candidate");
    let lead = candidate
        .election()
        .expect("election")
        .campaign(&jobs, "one", Some(TEST_WAIT_LIMIT))
        .await
        .expect("leads");
    let seen = first.await.expect("observer task").expect("a leader");
    assert_eq!((seen.value.as_str(), seen.term), ("one", lead.token));
    let proclaimed = next(Some(seen));
    candidate
        .election()
        .expect("election")
        .proclaim(lead.id, "two")
        .await
        .expect("proclaim");
    let seen = proclaimed.await.expect("the new value");
    assert_eq!((seen.value.as_str(), seen.term), ("two", lead.token));
    let resigned = next(Some(seen));
    candidate.release(lead.id).expect("resign");
    assert_eq!(resigned.await, None, "nobody leads");
    drop((candidate, observer));
    leading.shutdown().await;
    watching.shutdown().await;
    wait_clean(&server).await;
}
