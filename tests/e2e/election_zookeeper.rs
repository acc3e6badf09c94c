//! Leader election on ZooKeeper shared with Apache Curator's `LeaderLatch`
//! (Debian's Curator 5.4, driven by `interop/LockDriver.java` in its `latch`
//! mode), both ways: a Curator participant leads and hands over to a
//! wardlock candidate, and a wardlock leader hands over to a Curator latch.
//! A lock of the same name lives beside the election without either seeing
//! the other. (The kit's election check runs on ZooKeeper, with and without
//! hand-off, in `conformance`.)

use std::time::Duration;

use wardlock_host::{LockBackend, Mode};
use wardlock_tests::interop::Foreign;
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{TEST_WAIT_LIMIT, name};
use wardlock_zookeeper::ZooKeeperBackend;

use crate::zookeeper::ROOT;

/// A server, a wardlock backend on it and a probe of its nodes.
async fn start() -> (ZkServer, ZooKeeperBackend, ZkProbe) {
    let server = ZkServer::start();
    let backend = crate::zookeeper::backend(&server.address(), Duration::from_secs(10)).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    (server, backend, probe)
}

/// A Curator `LeaderLatch` participant `id` in election `election`.
fn latch(server: &ZkServer, election: &str, id: &str) -> Foreign {
    Foreign::curator(
        &server.address(),
        &format!("{ROOT}/{election}"),
        "latch",
        &[id],
    )
}

/// Curator leads first; a wardlock candidate waits behind it and takes over
/// when Curator's latch closes, which a second Curator latch then reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wardlock_candidate_follows_a_curator_leader() {
    let (server, backend, probe) = start().await;
    let election = name("elect/curator-first");
    let mut first = latch(&server, election.as_str(), "curator-1");
    first.expect("leader").await;
    probe.wait_len(election.as_str(), 1).await;

    let observer = backend.open_session("observer");
    let candidate = {
        let (session, election) = (backend.open_session("candidate"), election.clone());
        tokio::spawn(async move {
            let won = session
                .election()
                .expect("election")
                .campaign(&election, "wardlock-1", Some(TEST_WAIT_LIMIT))
                .await;
            (session, won)
        })
    };
    probe.wait_len(election.as_str(), 2).await;
    let led = observer
        .election()
        .expect("election")
        .leader(&election)
        .await
        .expect("leader");
    let led = led.expect("Curator leads");
    assert_eq!(led.value, "curator-1");
    assert!(led.owner.contains("-latch-"), "{}", led.owner);
    assert_eq!(first.ask("leader?").await, "getLeader curator-1");
    assert!(!candidate.is_finished(), "wardlock waits behind Curator");

    let mut second = latch(&server, election.as_str(), "curator-2");
    probe.wait_len(election.as_str(), 3).await;
    assert_eq!(second.ask("has?").await, "has false");
    let change = observer
        .election()
        .expect("election")
        .leader_changed(&election, Some(led.clone()));

    first.say("close").await;
    first.expect("closed").await;
    let (session, won) = candidate.await.expect("campaign task");
    let won = won.expect("the wardlock candidate leads once Curator's latch closed");
    assert!(
        won.token > led.term,
        "terms {} then {}",
        led.term,
        won.token
    );
    let now = tokio::time::timeout(TEST_WAIT_LIMIT, change)
        .await
        .expect("the observer heard of the change")
        .expect("leader_changed")
        .expect("a leader");
    assert_eq!((now.value.as_str(), now.term), ("wardlock-1", won.token));
    assert_eq!(second.ask("leader?").await, "getLeader wardlock-1");
    assert_eq!(second.ask("has?").await, "has false");

    // Resigning hands over to the Curator latch still participating.
    session.release(won.id).expect("resign");
    second.expect("leader").await;
    assert_eq!(second.ask("has?").await, "has true");
    assert_eq!(second.ask("leader?").await, "getLeader curator-2");
    second.say("close").await;
    second.expect("closed").await;
    second.finish().await;
    first.finish().await;
    probe.wait_len(election.as_str(), 0).await;
}

/// wardlock leads first; a Curator latch waits (`hasLeadership()` false)
/// until wardlock resigns. Meanwhile a lock of the same name is held and
/// released beside the election: wardlock's lock recipe and Curator's
/// read/write lock ignore the latch nodes, and neither side's election
/// takes the lock node for a candidate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_latch_follows_a_wardlock_leader_beside_a_lock() {
    let (server, backend, probe) = start().await;
    let election = name("elect/wardlock-first");
    // A lock of the same name, taken first: its node has the lower sequence.
    let locker = backend.open_session("locker");
    let lock = locker
        .try_acquire(&election, Mode::Exclusive)
        .await
        .expect("try")
        .expect("an empty lock");
    let leader = backend.open_session("leader");
    let lead = leader
        .election()
        .expect("election")
        .campaign(&election, "wardlock-first", Some(Duration::from_secs(5)))
        .await
        .expect("the election ignores the lock node ahead of it");
    let contenders = locker
        .contention()
        .expect("contention")
        .contenders(&election, 10)
        .await
        .expect("contenders");
    assert_eq!(
        contenders.total, 1,
        "the lock ignores the latch node: {contenders:?}"
    );

    let mut curator = latch(&server, election.as_str(), "curator-late");
    probe.wait_len(election.as_str(), 3).await;
    assert_eq!(curator.ask("has?").await, "has false");
    assert_eq!(curator.ask("leader?").await, "getLeader wardlock-first");
    let seen = locker
        .election()
        .expect("election")
        .leader(&election)
        .await
        .expect("leader");
    let seen = seen.expect("wardlock leads");
    assert_eq!(
        (seen.value.as_str(), seen.term),
        ("wardlock-first", lead.token)
    );

    // Curator's write lock queues behind wardlock's lock node, and only it.
    let path = format!("{ROOT}/{election}");
    let mut busy = Foreign::curator(&server.address(), &path, "rw-write", &["try"]);
    busy.expect("busy").await;
    busy.finish().await;
    locker.release(lock.id).expect("release the lock");
    probe.wait_len(election.as_str(), 2).await;
    let mut writer = Foreign::curator(&server.address(), &path, "rw-write", &["try"]);
    writer.expect("acquired").await;
    writer.release().await;
    writer.finish().await;

    // Leading all along; resigning hands over to Curator.
    assert_eq!(curator.ask("has?").await, "has false");
    let change = locker
        .election()
        .expect("election")
        .leader_changed(&election, Some(seen));
    leader.release(lead.id).expect("resign");
    curator.expect("leader").await;
    assert_eq!(curator.ask("has?").await, "has true");
    let now = tokio::time::timeout(TEST_WAIT_LIMIT, change)
        .await
        .expect("the observer heard of the change")
        .expect("leader_changed")
        .expect("a leader");
    assert_eq!(now.value, "curator-late");
    assert!(
        now.term > lead.token,
        "terms {} then {}",
        lead.token,
        now.term
    );

    curator.say("close").await;
    curator.expect("closed").await;
    curator.finish().await;
    let gone = tokio::time::timeout(
        TEST_WAIT_LIMIT,
        locker
            .election()
            .expect("election")
            .leader_changed(&election, Some(now)),
    )
    .await
    .expect("the observer heard Curator go")
    .expect("leader_changed");
    assert_eq!(gone, None);
    probe.wait_len(election.as_str(), 0).await;
}

/// A campaign dropped while it waits leaves no node behind (its session
/// lives on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_campaign_leaves_no_candidate() {
    let (_server, backend, probe) = start().await;
    let election = name("elect/dropped");
    let leader = backend.open_session("leader");
    let lead = leader
        .election()
        .expect("election")
        .campaign(&election, "a", Some(TEST_WAIT_LIMIT))
        .await
        .expect("leads");
    let waiter = backend.open_session("waiter");
    {
        let campaign = waiter
            .election()
            .expect("election")
            .campaign(&election, "b", None);
        tokio::select! {
            won = campaign => panic!("a second candidate cannot lead: {won:?}"),
            () = probe.wait_len(election.as_str(), 2) => {}
        }
    }
    probe.wait_len(election.as_str(), 1).await;
    let led = leader
        .election()
        .expect("election")
        .leader(&election)
        .await
        .expect("leader")
        .expect("one");
    assert_eq!((led.value.as_str(), led.term), ("a", lead.token));
    drop(leader);
    probe.wait_len(election.as_str(), 0).await;
}
