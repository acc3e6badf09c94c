//! The guarded store on etcd against a real etcd server: entries round-trip
//! with their writer's token under `<root>/%data/`, keys list in order
//! whatever escaping does to etcd's order, writes need an exclusive grant the
//! session holds, and a holder whose turn ended on etcd without its noticing
//! (its lease revoked, its key deleted) cannot overwrite the next holder's
//! entry.

use std::time::Duration;

use etcd_client::{Client, GetOptions};
use wardlock_etcd::{EtcdBackend, EtcdConfig, etcdctl_name};
use wardlock_host::backend::guarded::MAX_VALUE_BYTES;
use wardlock_host::backend::{GuardedEntry, GuardedKey};
use wardlock_host::{BackendError, GrantStatus, LockBackend, LockName, Mode};
use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::{TEST_WAIT_LIMIT, name};

const ROOT: &str = "/wardlock-guarded";

/// A host on `address` with a 10 s lease (never missed by accident).
async fn backend(address: &str) -> EtcdBackend {
    let config = EtcdConfig::new(address)
        .root(ROOT)
        .lease_ttl(Duration::from_secs(10));
    EtcdBackend::connect(config).await.expect("etcd backend")
}

/// A plain etcd client, as an operator (or a lease expiry) acts behind the
/// hosts' backs.
async fn raw(server: &EtcdServer) -> Client {
    let endpoints: Vec<String> = server
        .address()
        .split(',')
        .map(|a| format!("http://{a}"))
        .collect();
    Client::connect(endpoints, None).await.expect("etcd client")
}

/// The keys under `prefix`, read by `client`.
async fn raw_keys(client: &mut Client, prefix: &str) -> Vec<String> {
    let options = GetOptions::new().with_prefix().with_keys_only();
    let listed = client.get(prefix, Some(options)).await.expect("range");
    listed
        .kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .collect()
}

/// The one contender key of `lock` (the host's), with its lease.
async fn host_key(client: &mut Client, lock: &LockName) -> (String, i64) {
    let prefix = format!("{}/", etcdctl_name(ROOT, lock));
    let listed = client
        .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
        .await
        .expect("range");
    let [kv] = listed.kvs() else {
        panic!("{prefix}: expected one key, found {:?}", listed.kvs());
    };
    (String::from_utf8_lossy(kv.key()).into_owned(), kv.lease())
}

fn key(text: &str) -> GuardedKey {
    GuardedKey::new(text).expect("valid key")
}

/// Put, get, keys and delete through a session: the entry carries the
/// grant's token and the write's revision, keys come sorted (by key, not by
/// their escaped form) and bounded, a nested name's store never mixes with
/// its parent's, entries are no contenders, and deleting leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_guarded_round_trip() {
    let server = EtcdServer::start();
    let backend = backend(&server.address()).await;
    let mut client = raw(&server).await;
    let session = backend.open_session("guest");
    let lock = name("orders/eu");
    let parent = name("orders");
    let grant = session
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("acquire");
    let cursor = key("cursor");
    assert_eq!(
        session
            .guarded_store()
            .expect("guarded_store")
            .guarded_get(&lock, &cursor)
            .await
            .expect("get"),
        None
    );

    let first = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant.id, &cursor, b"v1")
        .await
        .expect("put");
    let entry = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&lock, &cursor)
        .await
        .expect("get");
    let expected = GuardedEntry {
        value: b"v1".to_vec(),
        token: grant.token,
        revision: first,
    };
    assert_eq!(entry, Some(expected));
    let second = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant.id, &cursor, b"v2")
        .await
        .expect("put");
    assert!(second > first, "revision {second} after {first}");
    let entry = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&lock, &cursor)
        .await
        .expect("get")
        .expect("entry");
    assert_eq!(
        (entry.value.as_slice(), entry.token, entry.revision),
        (&b"v2"[..], grant.token, second)
    );

    // Escaped, `a/1` is `a%2F1`, which etcd sorts before `a&`: the listing
    // must still be in key order.
    let written = ["b", "a/2", "a&", "a/1"];
    for k in written {
        session
            .guarded_store()
            .expect("guarded_store")
            .guarded_put(grant.id, &key(k), k.as_bytes())
            .await
            .expect("put");
    }
    let parents = session
        .acquire(&parent, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("acquire the parent name");
    session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(parents.id, &key("a/0"), b"parent's")
        .await
        .expect("put");
    let keys = |prefix: &'static str, limit| {
        let session = &session;
        let lock = &lock;
        async move {
            session
                .guarded_store()
                .expect("guarded_store")
                .guarded_keys(lock, prefix, limit)
                .await
                .expect("keys")
        }
    };
    assert_eq!(keys("", 100).await, ["a&", "a/1", "a/2", "b", "cursor"]);
    assert_eq!(keys("", 2).await, ["a&", "a/1"]);
    assert_eq!(keys("a/", 100).await, ["a/1", "a/2"]);
    assert_eq!(keys("a", 100).await, ["a&", "a/1", "a/2"]);
    assert_eq!(keys("z", 100).await, Vec::<String>::new());
    assert_eq!(keys("", 0).await, Vec::<String>::new());
    assert_eq!(
        session
            .guarded_store()
            .expect("guarded_store")
            .guarded_keys(&parent, "", 100)
            .await
            .expect("keys"),
        ["a/0"]
    );

    // The layout: one room under the root, no lock's prefix touched.
    let stored = raw_keys(&mut client, &format!("{ROOT}/%data/")).await;
    assert_eq!(stored.len(), 6, "{stored:?}");
    assert!(
        stored.contains(&format!("{ROOT}/%data/orders%2Feu/a%2F1")),
        "{stored:?}"
    );
    let queue = backend.queue(&lock).await.expect("queue");
    assert_eq!(queue.len(), 1, "entries are no contenders: {queue:?}");

    for k in ["cursor", "b", "a/2", "a&", "a/1"] {
        assert!(
            session
                .guarded_store()
                .expect("guarded_store")
                .guarded_delete(grant.id, &key(k))
                .await
                .expect("delete"),
            "{k} was there"
        );
    }
    assert!(
        !session
            .guarded_store()
            .expect("guarded_store")
            .guarded_delete(grant.id, &cursor)
            .await
            .expect("delete again"),
        "deleted twice"
    );
    assert!(
        session
            .guarded_store()
            .expect("guarded_store")
            .guarded_delete(parents.id, &key("a/0"))
            .await
            .expect("delete")
    );
    assert_eq!(
        session
            .guarded_store()
            .expect("guarded_store")
            .guarded_get(&lock, &cursor)
            .await
            .expect("get"),
        None
    );
    assert_eq!(keys("", 100).await, Vec::<String>::new());
    let left = raw_keys(&mut client, &format!("{ROOT}/%data/")).await;
    assert_eq!(left, Vec::<String>::new());
    drop(session);
    server.wait_keys(ROOT, 0).await;
    backend.shutdown().await;
}

/// Writes need an exclusive lock grant of this session: a released grant is
/// unknown, a shared one (downgraded too) or a permit is refused, a value
/// over the limit is refused; none writes anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_guarded_writes_need_an_exclusive_grant_and_a_small_value() {
    let server = EtcdServer::start();
    let backend = backend(&server.address()).await;
    let session = backend.open_session("guest");
    let lock = name("ledger");
    let entry = key("total");

    let grant = session
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("acquire");
    let largest = vec![7u8; MAX_VALUE_BYTES];
    session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant.id, &entry, &largest)
        .await
        .expect("a value of the limit is written");
    let too_large = vec![7u8; MAX_VALUE_BYTES + 1];
    let refused = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant.id, &entry, &too_large)
        .await;
    assert!(
        matches!(refused, Err(BackendError::LimitExceeded(_))),
        "{refused:?}"
    );

    let shared = session.downgrade(grant.id).await.expect("downgrade");
    let refused = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(shared.id, &entry, b"r")
        .await;
    assert!(
        matches!(&refused, Err(BackendError::InvalidRequest(why)) if why.contains("shared")),
        "{refused:?}"
    );
    session.release(grant.id).expect("release");
    let refused = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant.id, &entry, b"late")
        .await;
    assert!(
        matches!(refused, Err(BackendError::UnknownGrant(id)) if id == grant.id.0),
        "{refused:?}"
    );
    let refused = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_delete(grant.id, &entry)
        .await;
    assert!(
        matches!(refused, Err(BackendError::UnknownGrant(_))),
        "{refused:?}"
    );
    let refused = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_delete(shared.id, &entry)
        .await;
    assert!(
        matches!(refused, Err(BackendError::InvalidRequest(_))),
        "{refused:?}"
    );
    session.release(shared.id).expect("release");

    let reader = session
        .acquire(&lock, Mode::Shared, Some(TEST_WAIT_LIMIT))
        .await
        .expect("acquire shared");
    let refused = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(reader.id, &entry, b"r")
        .await;
    assert!(
        matches!(refused, Err(BackendError::InvalidRequest(_))),
        "{refused:?}"
    );
    session.release(reader.id).expect("release");

    let permit = session
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&name("pool"), 2, Some(TEST_WAIT_LIMIT))
        .await
        .expect("permit");
    let refused = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(permit.id, &entry, b"p")
        .await;
    assert!(
        matches!(&refused, Err(BackendError::InvalidRequest(why)) if why.contains("permit")),
        "{refused:?}"
    );

    let stored = session
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&lock, &entry)
        .await
        .expect("get")
        .expect("entry");
    assert_eq!(
        (stored.value, stored.token),
        (largest, grant.token),
        "only the first write landed"
    );
    drop(session);
    backend.shutdown().await;
}

/// How host A's turn ends on etcd behind its back.
#[derive(Debug, Clone, Copy)]
enum Behind {
    /// Its lease is revoked, as etcd expires the lease of a host paused past
    /// its TTL: A's keep-alive may notice, or not yet.
    RevokeLease,
    /// Its key is deleted while its lease lives: A's clock, and `status`,
    /// still say held; only etcd knows.
    DeleteKey,
}

/// The fence: host A holds `lock` and writes; its turn ends on etcd
/// (`behind`); host B takes the lock and writes. A's write and delete then
/// fail with `Lost` and B's entry stands, with B's token.
async fn fence(lock: &str, behind: Behind) {
    let server = EtcdServer::start();
    let host_a = backend(&server.address()).await;
    let host_b = backend(&server.address()).await;
    let mut client = raw(&server).await;
    let lock = name(lock);
    let entry = key("owner");

    let a = host_a.open_session("a");
    let grant_a = a
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("A acquires");
    a.guarded_store()
        .expect("guarded_store")
        .guarded_put(grant_a.id, &entry, b"0")
        .await
        .expect("A writes while it holds");
    let (key_a, lease) = host_key(&mut client, &lock).await;
    assert_eq!(Some(lease), host_a.lease_id());
    match behind {
        Behind::RevokeLease => {
            client.lease_revoke(lease).await.expect("revoke A's lease");
        }
        Behind::DeleteKey => {
            client.delete(key_a, None).await.expect("delete A's key");
        }
    }

    let b = host_b.open_session("b");
    let grant_b = b
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("B acquires once A's key is gone");
    assert!(grant_b.token > grant_a.token);
    let written = b
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant_b.id, &entry, b"2")
        .await
        .expect("B writes");

    let noticed = a.status(grant_a.id);
    eprintln!("fence {behind:?}: A's grant was {noticed:?} at its stale write");
    if let Behind::DeleteKey = behind {
        assert_eq!(noticed, GrantStatus::Held, "A's lease lives");
    }
    let stale = a
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant_a.id, &entry, b"1")
        .await;
    assert!(
        matches!(stale, Err(BackendError::Lost)),
        "A's stale write ({behind:?}, A's grant {noticed:?}): {stale:?}"
    );
    let stale = a
        .guarded_store()
        .expect("guarded_store")
        .guarded_delete(grant_a.id, &entry)
        .await;
    assert!(matches!(stale, Err(BackendError::Lost)), "{stale:?}");
    let expected = GuardedEntry {
        value: b"2".to_vec(),
        token: grant_b.token,
        revision: written,
    };
    assert_eq!(
        a.guarded_store()
            .expect("guarded_store")
            .guarded_get(&lock, &entry)
            .await
            .expect("A reads"),
        Some(expected)
    );
    drop((a, b));
    host_a.shutdown().await;
    host_b.shutdown().await;
}

/// A paused host's lease expires (revoked here) and the next host writes:
/// the paused host's write is lost, refused by the transaction if it has
/// not noticed yet, or before it leaves if it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_guarded_write_of_a_revoked_lease_is_lost() {
    fence("fenced", Behind::RevokeLease).await;
}

/// Only etcd can tell that A's turn ended (its key deleted under a live
/// lease): the transaction refuses A's write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_guarded_write_of_a_deleted_key_is_refused_by_etcd() {
    fence("fenced/by-etcd", Behind::DeleteKey).await;
}
