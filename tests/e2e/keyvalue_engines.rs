//! The key-value store on ZooKeeper and etcd against real servers: a fenced
//! batch whose declared lock's node or key is gone on the server (the host
//! not told) is refused by the server itself and writes nothing (on
//! ZooKeeper with and without host-local hand-off); entries are plain nodes
//! or keys under `<root>/%kv/<bucket>/`, readable with any client; a stale
//! version conflicts and a batch with one conflict writes none of its keys.

use std::time::Duration;

use wardlock_etcd::{EtcdBackend, EtcdConfig, etcdctl_name};
use wardlock_host::backend::keyvalue::{Bucket, Expect, KvCommit, KvKey, KvWrite};
use wardlock_host::{BackendError, LockBackend, Mode};
use wardlock_postgres::{PostgresBackend, PostgresConfig};
use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::postgres::PgServer;
use wardlock_tests::zookeeper::{ZkServer, backend_under, delete_the_holder_node};
use wardlock_tests::{TEST_WAIT_LIMIT, name};
use zookeeper_client::Client;

const ROOT: &str = "/wardlock-kv";

fn key(text: &str) -> KvKey {
    KvKey::new(text).expect("valid key")
}

fn put(text: &str, value: &[u8]) -> KvWrite {
    KvWrite::put(key(text), value.to_vec())
}

/// Host A holds `counter` and writes a batch through its fence; `raw` reads
/// entry `n` as any client of the server would; `remove` ends A's turn on
/// the server behind its back; host B takes the lock and writes; A's next
/// fenced batch is refused by the server (`lost`) and writes none of its
/// keys.
async fn a_fenced_batch_is_refused_once_its_turn_is_gone(
    a: &dyn LockBackend,
    b: &dyn LockBackend,
    raw: impl AsyncFnOnce() -> Vec<u8>,
    remove: impl AsyncFnOnce(),
) {
    let lock = name("counter");
    let bucket = Bucket::default();
    let holder = a.open_session("a");
    let held = holder
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("a acquires");
    let store = holder.key_value().expect("a key-value store");
    let first = [put("n", b"1"), put("m", b"1")];
    let committed = store.kv_write(&bucket, &first, &[held.id]).await;
    assert_eq!(committed, Ok(KvCommit::Committed));
    assert_eq!(
        raw().await,
        b"1",
        "the value as written, readable by any client"
    );

    remove().await;
    let next = b.open_session("b");
    let granted = next
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("b acquires");
    let theirs = next.key_value().expect("store");
    let written = theirs
        .kv_write(&bucket, &[put("n", b"2")], &[granted.id])
        .await;
    assert_eq!(written, Ok(KvCommit::Committed));

    let stale = [put("n", b"stale"), put("m", b"stale")];
    let refused = store.kv_write(&bucket, &stale, &[held.id]).await;
    assert_eq!(refused, Err(BackendError::Lost), "a's stale batch");
    for (k, expected) in [("n", b"2"), ("m", b"1")] {
        let entry = theirs.kv_get(&bucket, &key(k)).await.expect("get");
        assert_eq!(entry.map(|e| e.value), Some(expected.to_vec()), "{k}");
    }
    next.release(granted.id).expect("release");
}

async fn zookeeper_refuses_a_fenced_batch(handoff: bool) {
    let server = ZkServer::start();
    let (a, b) = (
        backend_under(&server, ROOT, handoff).await,
        backend_under(&server, ROOT, handoff).await,
    );
    let client = Client::connect(&server.address()).await.expect("client");
    let raw = async || {
        let path = format!("{ROOT}/%kv/default/n");
        client.get_data(&path).await.expect("a plain node").0
    };
    let queue = format!("{ROOT}/counter");
    let remove = async || delete_the_holder_node(&client, &queue).await;
    a_fenced_batch_is_refused_once_its_turn_is_gone(&a, &b, raw, remove).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_refuses_a_fenced_key_value_write_whose_node_is_gone() {
    zookeeper_refuses_a_fenced_batch(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_refuses_a_fenced_key_value_handoff_write_whose_node_is_gone() {
    zookeeper_refuses_a_fenced_batch(true).await;
}

/// Versions: a compare-and-write at a stale version conflicts, one at the
/// current version commits; a batch with one conflict writes none of its
/// keys; a plain delete of a missing key is no error; keys list sorted, in
/// pages, per bucket.
async fn versions_batches_and_listing(host: &dyn LockBackend) {
    let session = host.open_session("kv");
    let store = session.key_value().expect("store");
    let bucket = Bucket::new("orders").expect("bucket");
    let absent = KvWrite {
        key: key("n"),
        value: Some(b"0".to_vec()),
        expect: Expect::Absent,
    };
    let first = store
        .kv_write(&bucket, std::slice::from_ref(&absent), &[])
        .await;
    assert_eq!(first, Ok(KvCommit::Committed));
    let again = store.kv_write(&bucket, &[absent], &[]).await;
    assert_eq!(again, Ok(KvCommit::Conflict(key("n"))), "created twice");
    let version = store
        .kv_get(&bucket, &key("n"))
        .await
        .expect("get")
        .expect("entry")
        .version;
    let plain = store.kv_write(&bucket, &[put("n", b"1")], &[]).await;
    assert_eq!(plain, Ok(KvCommit::Committed));
    let at = |expect| KvWrite {
        key: key("n"),
        value: Some(b"2".to_vec()),
        expect,
    };
    let batch = [put("other", b"x"), at(Expect::Version(version))];
    let stale = store.kv_write(&bucket, &batch, &[]).await;
    assert_eq!(stale, Ok(KvCommit::Conflict(key("n"))));
    assert_eq!(store.kv_get(&bucket, &key("other")).await, Ok(None));
    let current = store
        .kv_get(&bucket, &key("n"))
        .await
        .expect("get")
        .expect("entry");
    let fresh = store
        .kv_write(&bucket, &[at(Expect::Version(current.version))], &[])
        .await;
    assert_eq!(fresh, Ok(KvCommit::Committed));
    let gone = store
        .kv_write(&bucket, &[KvWrite::delete(key("never"))], &[])
        .await;
    assert_eq!(gone, Ok(KvCommit::Committed));

    let many: Vec<KvWrite> = ["c", "a/b", "b"].iter().map(|k| put(k, b"v")).collect();
    let listed = store.kv_write(&bucket, &many, &[]).await;
    assert_eq!(listed, Ok(KvCommit::Committed));
    assert_eq!(
        store.kv_keys(&bucket, 0, 10).await.expect("keys"),
        ["a/b", "b", "c", "n"]
    );
    assert_eq!(
        store.kv_keys(&bucket, 1, 2).await.expect("keys"),
        ["b", "c"]
    );
    let empty = store
        .kv_keys(&Bucket::default(), 0, 10)
        .await
        .expect("keys");
    assert!(empty.is_empty(), "{empty:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_key_value_versions_batches_and_listing() {
    let server = ZkServer::start();
    versions_batches_and_listing(&backend_under(&server, ROOT, true).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_key_value_versions_batches_and_listing() {
    let server = EtcdServer::start();
    versions_batches_and_listing(&etcd_backend(&server).await).await;
}

/// An etcd host on `server` with a 10 s lease (never missed by accident).
async fn etcd_backend(server: &EtcdServer) -> EtcdBackend {
    let config = EtcdConfig::new(&server.address())
        .root(ROOT)
        .lease_ttl(Duration::from_secs(10));
    EtcdBackend::connect(config).await.expect("etcd backend")
}

/// On etcd: host A's key for the lock is deleted behind its back, and its
/// transaction's compare of that key's create revision fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_refuses_a_fenced_key_value_write_whose_key_is_gone() {
    let server = EtcdServer::start();
    let (a, b) = (etcd_backend(&server).await, etcd_backend(&server).await);
    let endpoints: Vec<String> = server
        .address()
        .split(',')
        .map(|a| format!("http://{a}"))
        .collect();
    let client = etcd_client::Client::connect(endpoints, None)
        .await
        .expect("etcd client");
    let raw = async || {
        let read = client
            .clone()
            .get(format!("{ROOT}/%kv/default/n"), None)
            .await;
        let read = read.expect("get");
        read.kvs()
            .first()
            .map(|kv| kv.value().to_vec())
            .unwrap_or_default()
    };
    let remove = async || {
        let prefix = format!("{}/", etcdctl_name(ROOT, &name("counter")));
        let options = etcd_client::GetOptions::new().with_prefix();
        let mut client = client.clone();
        let listed = client
            .get(prefix.as_str(), Some(options))
            .await
            .expect("range");
        let [kv] = listed.kvs() else {
            panic!("{prefix}: expected one key, found {:?}", listed.kvs());
        };
        client.delete(kv.key(), None).await.expect("delete a's key");
    };
    a_fenced_batch_is_refused_once_its_turn_is_gone(&a, &b, raw, remove).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_key_value_versions_batches_and_listing() {
    let server = PgServer::start();
    let backend = PostgresBackend::connect(PostgresConfig::new(&server.url()))
        .await
        .expect("postgres backend");
    versions_batches_and_listing(&backend).await;
    backend.shutdown().await;
}
