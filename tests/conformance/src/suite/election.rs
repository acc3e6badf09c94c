//! The conformance suite's check of leader election (issue 38): one leader
//! at a time, candidates served in arrival order, terms that rise with every
//! new leader, a value the leader proclaims and every observer sees, and a
//! leadership that resigns like a lock is released and writes the election
//! name's guarded store like an exclusive holder.

use std::time::Duration;

use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, GrantStatus, GuardedKey, Leader, LockSession};

use super::skipped;
use crate::{Subject, TEST_WAIT_LIMIT, name};

/// A waiting candidate, campaigning in a task.
type Campaign = tokio::task::JoinHandle<(
    Box<dyn LockSession>,
    Result<wardlock_backend::Grant, BackendError>,
)>;

fn campaign(session: Box<dyn LockSession>, election: &LockName, value: &str) -> Campaign {
    let (election, value) = (election.clone(), value.to_owned());
    tokio::spawn(async move {
        let won = session
            .election()
            .expect("election")
            .campaign(&election, &value, Some(TEST_WAIT_LIMIT))
            .await;
        (session, won)
    })
}

/// The next leader of `election` other than `seen`, within the test's limit.
async fn next_leader(
    session: &dyn LockSession,
    election: &LockName,
    seen: Option<Leader>,
) -> Option<Leader> {
    tokio::time::timeout(
        TEST_WAIT_LIMIT,
        session
            .election()
            .expect("election")
            .leader_changed(election, seen),
    )
    .await
    .expect("the leader changed in time")
    .expect("leader_changed")
}

pub(super) async fn elections_have_one_leader_at_a_time(s: &Subject) {
    if !s.features.elections {
        return skipped("elections_have_one_leader_at_a_time", "leader election");
    }
    let election = name("conf/election");
    let observer = s.backend.open_session("observer");
    assert_eq!(
        observer
            .election()
            .expect("election")
            .leader(&election)
            .await,
        Ok(None)
    );

    let first = s.backend.open_session("first");
    let lead = first
        .election()
        .expect("election")
        .campaign(&election, "alpha", Some(TEST_WAIT_LIMIT))
        .await
        .expect("the first candidate leads");
    let leader = observer
        .election()
        .expect("election")
        .leader(&election)
        .await
        .expect("leader")
        .expect("one");
    assert_eq!((leader.value.as_str(), leader.term), ("alpha", lead.token));

    // A second candidate waits; a try with a short timeout times out.
    let third = s.backend.open_session("third");
    let timed_out = third
        .election()
        .expect("election")
        .campaign(&election, "gamma", Some(Duration::from_millis(100)))
        .await;
    assert_eq!(timed_out.err(), Some(BackendError::Timeout));
    let second = campaign(s.backend.open_session("second"), &election, "beta");

    // The leader proclaims; an observer sees the new value, same term.
    first
        .election()
        .expect("election")
        .proclaim(lead.id, "alpha-2")
        .await
        .expect("proclaim");
    let proclaimed = next_leader(&*observer, &election, Some(leader))
        .await
        .expect("a leader");
    assert_eq!(
        (proclaimed.value.as_str(), proclaimed.term),
        ("alpha-2", lead.token)
    );

    // The leader writes the election's store; then it resigns.
    let key = GuardedKey::new("epoch").expect("key");
    first
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(lead.id, &key, b"1")
        .await
        .expect("the leader writes");
    first.release(lead.id).expect("resign");
    assert_eq!(first.status(lead.id), GrantStatus::Released);
    let late = first
        .election()
        .expect("election")
        .proclaim(lead.id, "ghost")
        .await;
    assert!(
        matches!(late, Err(BackendError::UnknownGrant(_))),
        "{late:?}"
    );

    let (second, won) = second.await.expect("campaign task");
    let won = won.expect("the second candidate leads next");
    assert!(
        won.token > lead.token,
        "terms {} then {}",
        lead.token,
        won.token
    );
    let now = observer
        .election()
        .expect("election")
        .leader(&election)
        .await
        .expect("leader")
        .expect("one");
    assert_eq!((now.value.as_str(), now.term), ("beta", won.token));
    let entry = observer
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&election, &key)
        .await
        .expect("get")
        .expect("entry");
    assert_eq!(
        (entry.value.as_slice(), entry.token),
        (&b"1"[..], lead.token)
    );
    second.release(won.id).expect("resign");
    let gone = next_leader(&*observer, &election, Some(now)).await;
    assert_eq!(gone, None, "nobody leads once every candidate went");
    second
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&election, &key)
        .await
        .expect("get")
        .expect("the entry outlives its writer's term");
    // A last leader clears the store: the engine is left as found.
    let last = s.backend.open_session("last");
    let lead = last
        .election()
        .expect("election")
        .campaign(&election, "omega", Some(TEST_WAIT_LIMIT))
        .await
        .expect("a last leader");
    assert_eq!(
        last.guarded_store()
            .expect("guarded_store")
            .guarded_delete(lead.id, &key)
            .await,
        Ok(true)
    );
    last.release(lead.id).expect("resign");
}
