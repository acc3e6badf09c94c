//! Leader election on etcd against a real etcd server: the conformance kit's
//! election check, and `etcdctl elect` (Go's `concurrency.Election`) and
//! wardlock's candidates in one election, both ways; several candidates of
//! one host queue in etcd among other hosts' (each a key of its own); a lock
//! and an election of one name share one queue. Synchronisation waits for
//! what etcdctl prints or for keys in etcd, never for time.

use std::sync::Arc;
use std::time::Duration;

use wardlock_etcd::{EtcdBackend, EtcdConfig, etcdctl_name};
use wardlock_host::backend::{GuardedKey, LockSession};
use wardlock_host::name::LockName;
use wardlock_host::{BackendError, Grant, GrantStatus, LockBackend, Mode};
use wardlock_tests::conformance::{Subject, checks};
use wardlock_tests::etcd::{EtcdServer, EtcdctlElect};
use wardlock_tests::probe::HandoffProbe;
use wardlock_tests::{TEST_WAIT_LIMIT, name};

/// A host on `server` with wardlock's default root (`/wardlock`), so the
/// election `NAME` is `etcdctl elect /wardlock/NAME`.
async fn host(server: &EtcdServer) -> EtcdBackend {
    let config = EtcdConfig::new(&server.address()).lease_ttl(Duration::from_secs(10));
    EtcdBackend::connect(config).await.expect("etcd backend")
}

/// A session campaigning for `election` with `value` in a task: the session
/// and how the campaign ended.
type Campaign = tokio::task::JoinHandle<(Box<dyn LockSession>, Result<Grant, BackendError>)>;

fn campaign_in_task(session: Box<dyn LockSession>, election: &LockName, value: &str) -> Campaign {
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

/// The kit's election check on etcd (every candidate a session of one host);
/// afterwards no candidate key is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_elections_conform() {
    let server = EtcdServer::start();
    let backend = Arc::new(host(&server).await);
    let subject = Subject::new(backend.clone(), Arc::new(HandoffProbe(backend.clone())));
    checks::elections_have_one_leader_at_a_time(&subject).await;
    drop(subject);
    server.wait_keys("/wardlock/conf%2Felection/", 0).await;
    backend.shutdown().await;
}

/// `etcdctl elect NAME alice` leads; a wardlock candidate waits behind it
/// and sees alice as the leader; once etcdctl is stopped (it resigns), the
/// wardlock candidate leads with a greater term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_leads_then_a_guest_takes_over() {
    let server = EtcdServer::start();
    let backend = host(&server).await;
    let election = name("leader");
    let outside_name = etcdctl_name("/wardlock", &election);
    assert_eq!(outside_name, "/wardlock/leader");

    let mut alice = EtcdctlElect::campaign(&server, &outside_name, "alice");
    let (alice_key, value) = alice.next().await;
    assert_eq!(value, "alice");
    assert!(alice_key.starts_with("/wardlock/leader/"), "{alice_key}");

    let session = backend.open_session("guest");
    let leader = session
        .election()
        .expect("election")
        .leader(&election)
        .await
        .expect("leader")
        .expect("one");
    assert_eq!(leader.value, "alice");
    let alice_lease = alice_key.rsplit('/').next().expect("lease hex");
    assert_eq!(leader.owner, format!("lease {alice_lease}"));

    let started = std::time::Instant::now();
    let waiting = campaign_in_task(session, &election, "wardlock-1");
    server.wait_keys("/wardlock/leader/", 2).await;
    assert!(
        !waiting.is_finished(),
        "a candidate waits while etcdctl leads"
    );

    alice.interrupt().await;
    let (session, won) = waiting.await.expect("campaign task");
    let won = won.expect("the guest leads once etcdctl resigned");
    eprintln!("guest led {:?} after etcdctl was asked", started.elapsed());
    assert!(
        won.token > leader.term,
        "{} then {}",
        leader.term,
        won.token
    );
    let now = session
        .election()
        .expect("election")
        .leader(&election)
        .await
        .expect("leader")
        .expect("one");
    assert_eq!((now.value.as_str(), now.term), ("wardlock-1", won.token));
    session.release(won.id).expect("resign");
    server.wait_keys("/wardlock/leader/", 0).await;
    backend.shutdown().await;
}

/// A guest leads with "bob": `etcdctl elect -l` prints bob, then the value
/// bob proclaims; `etcdctl elect NAME carol` waits until bob resigns, then
/// leads (ahead of a later candidate of bob's own host, which leads once
/// carol is stopped). The leadership writes the election's guarded store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_leads_etcdctl_observes_and_follows() {
    let server = EtcdServer::start();
    let backend = host(&server).await;
    let election = name("jobs/nightly");
    let outside_name = etcdctl_name("/wardlock", &election);
    assert_eq!(outside_name, "/wardlock/jobs%2Fnightly");
    let prefix = format!("{outside_name}/");

    let bob = backend.open_session("bob");
    let lead = bob
        .election()
        .expect("election")
        .campaign(&election, "bob", Some(TEST_WAIT_LIMIT))
        .await
        .expect("bob leads");
    let mut observer = EtcdctlElect::observe(&server, &outside_name);
    let (bob_key, value) = observer.next().await;
    assert_eq!(value, "bob");
    assert!(bob_key.starts_with(&prefix), "{bob_key}");
    let lease = backend.lease_id().expect("a live lease");
    assert_eq!(bob_key, format!("{prefix}{lease:x}-0"));

    bob.election()
        .expect("election")
        .proclaim(lead.id, "bob-2")
        .await
        .expect("proclaim");
    assert_eq!(observer.next().await, (bob_key.clone(), "bob-2".to_owned()));
    let key = GuardedKey::new("owner").expect("key");
    bob.guarded_store()
        .expect("guarded_store")
        .guarded_put(lead.id, &key, b"bob")
        .await
        .expect("the leader writes its election's store");

    // carol (etcdctl) queues, then dave (a second candidate of bob's host).
    let mut carol = EtcdctlElect::campaign(&server, &outside_name, "carol");
    server.wait_keys(&prefix, 2).await;
    let dave = campaign_in_task(backend.open_session("dave"), &election, "dave");
    server.wait_keys(&prefix, 3).await;
    assert!(carol.printed_nothing(), "carol waits while bob leads");
    let queue = bob
        .contention()
        .expect("contention")
        .contenders(&election, 10)
        .await
        .expect("contenders");
    assert_eq!(queue.total, 3, "{queue:?}");

    let before = std::time::Instant::now();
    bob.release(lead.id).expect("resign");
    let (carol_key, value) = carol.next().await;
    eprintln!("carol led {:?} after bob resigned", before.elapsed());
    assert_eq!(value, "carol");
    assert_eq!(observer.next().await, (carol_key, "carol".to_owned()));
    let late = bob
        .election()
        .expect("election")
        .proclaim(lead.id, "ghost")
        .await;
    assert!(
        matches!(late, Err(BackendError::UnknownGrant(_))),
        "{late:?}"
    );
    assert!(!dave.is_finished(), "dave queued after carol");
    let now = bob
        .election()
        .expect("election")
        .leader(&election)
        .await
        .expect("leader")
        .expect("one");
    assert_eq!(now.value, "carol");

    carol.interrupt().await;
    let (dave_session, won) = dave.await.expect("campaign task");
    let won = won.expect("dave leads after carol");
    assert!(won.token > now.term, "{} then {}", now.term, won.token);
    assert_eq!(dave_session.status(won.id), GrantStatus::Held);
    let (dave_key, value) = observer.next().await;
    assert_eq!(value, "dave");
    assert_eq!(dave_key, format!("{prefix}{lease:x}-1"));
    let entry = dave_session
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&election, &key)
        .await
        .expect("get")
        .expect("bob's entry");
    assert_eq!(
        (entry.value.as_slice(), entry.token),
        (&b"bob"[..], lead.token)
    );

    drop(dave_session);
    server.wait_keys(&prefix, 0).await;
    observer.interrupt().await;
    backend.shutdown().await;
}

/// A lock and an election of one name are one queue on etcd (as `etcdctl
/// lock` and `etcdctl elect` of one name are): a candidate waits for the
/// lock's holder; a dropped campaign leaves no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_and_an_election_of_one_name_share_a_queue() {
    let server = EtcdServer::start();
    let backend = host(&server).await;
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
    assert_eq!(leader.value, "", "a lock key's value is empty");

    // A campaign dropped while it waits takes its key with it.
    {
        let campaign = candidate
            .election()
            .expect("election")
            .campaign(&shared_name, "c", None);
        let waited = tokio::time::timeout(Duration::from_millis(200), campaign).await;
        assert!(waited.is_err(), "the candidate waits for the lock");
    }
    server.wait_keys("/wardlock/shared/", 1).await;
    let refused = candidate
        .election()
        .expect("election")
        .campaign(&shared_name, "wardlock:shared", None)
        .await;
    assert!(
        matches!(refused, Err(BackendError::InvalidRequest(_))),
        "{refused:?}"
    );

    holder.release(lock.id).expect("release");
    let won = candidate
        .election()
        .expect("election")
        .campaign(&shared_name, "c", Some(TEST_WAIT_LIMIT))
        .await
        .expect("leads once the lock is free");
    assert!(won.token > lock.token);
    let refused = candidate.downgrade(won.id).await;
    assert!(
        matches!(refused, Err(BackendError::InvalidRequest(_))),
        "{refused:?}"
    );
    drop(candidate);
    server.wait_keys("/wardlock/shared/", 0).await;
    backend.shutdown().await;
}
