//! The key-value store on ZooKeeper against a real server: a fenced batch
//! whose declared lock's node is gone on the server (the host not told) is
//! refused by the server itself and writes nothing, with and without
//! host-local hand-off; entries are plain nodes under `<root>/%kv/<bucket>/`,
//! readable with any client; a stale version conflicts and a batch with one
//! conflict writes none of its keys.

use wardlock_host::backend::keyvalue::{Bucket, Expect, KvCommit, KvKey, KvWrite};
use wardlock_host::{BackendError, LockBackend, Mode};
use wardlock_tests::zookeeper::{ZkServer, delete_the_holder_node};
use wardlock_tests::{TEST_WAIT_LIMIT, name};
use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};
use zookeeper_client::Client;

const ROOT: &str = "/wardlock-kv";

async fn backend(server: &ZkServer, handoff: bool) -> ZooKeeperBackend {
    let mut config = ZooKeeperConfig::new(server.address()).root(ROOT);
    if handoff {
        config = config.local_handoff(LocalHandoff::default());
    }
    ZooKeeperBackend::connect(config).await.expect("backend")
}

fn key(text: &str) -> KvKey {
    KvKey::new(text).expect("valid key")
}

fn put(text: &str, value: &[u8]) -> KvWrite {
    KvWrite::put(key(text), value.to_vec())
}

async fn a_fenced_write_whose_node_is_gone_is_refused(handoff: bool) {
    let server = ZkServer::start();
    let (a, b) = (
        backend(&server, handoff).await,
        backend(&server, handoff).await,
    );
    let client = Client::connect(&server.address()).await.expect("client");
    let lock = name("counter");
    let bucket = Bucket::default();

    let holder = a.open_session("a");
    let held = holder
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("a acquires");
    let store = holder.key_value().expect("ZooKeeper has a key-value store");
    let first = [put("n", b"1"), put("m", b"1")];
    let committed = store.kv_write(&bucket, &first, &[held.id]).await;
    assert_eq!(committed, Ok(KvCommit::Committed));
    let (raw, _) = client
        .get_data(&format!("{ROOT}/%kv/default/n"))
        .await
        .expect("the entry is a plain node");
    assert_eq!(raw, b"1", "the value as written, readable by any client");

    let queue = format!("{ROOT}/{lock}");
    delete_the_holder_node(&client, &queue).await;
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
    let read = |k: &'static str| {
        let theirs = &theirs;
        let bucket = &bucket;
        async move {
            theirs
                .kv_get(bucket, &key(k))
                .await
                .expect("get")
                .map(|e| e.value)
        }
    };
    assert_eq!(read("n").await, Some(b"2".to_vec()));
    assert_eq!(read("m").await, Some(b"1".to_vec()), "nothing of the batch");
    next.release(granted.id).expect("release");
    drop(holder);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_refuses_a_fenced_key_value_write_whose_node_is_gone() {
    a_fenced_write_whose_node_is_gone_is_refused(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_refuses_a_fenced_key_value_handoff_write_whose_node_is_gone() {
    a_fenced_write_whose_node_is_gone_is_refused(true).await;
}

/// Versions: a compare-and-write at a stale version conflicts, one at the
/// current version commits; a batch with one conflict writes none of its
/// keys; a plain delete of a missing key is no error; keys list sorted, in
/// pages, per bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_key_value_versions_batches_and_listing() {
    let server = ZkServer::start();
    let host = backend(&server, true).await;
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
