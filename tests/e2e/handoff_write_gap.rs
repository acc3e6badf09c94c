//! The hand-off write gap, closed on every engine with hand-off on: a guarded
//! write still out on the wire when its instance ends keeps its grant until
//! the engine answers, so the next guest of the same host (who shares the
//! host's one node or key, which the engine's compare sees) is granted only
//! after it, and its own writes land after it.
//!
//! The write is held out by a proxy between the host and its lock service
//! that stalls (passes nothing, loses nothing), so the write reaches the
//! server after the instance that sent it ended.
//!
//! The same for a `wasi:keyvalue` write fenced by a declared lock: the
//! fence's session and grant stay until the engine answers the write.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use wardlock_etcd::{EtcdBackend, EtcdConfig};
use wardlock_host::backend::keyvalue::{Bucket, KvCommit, KvKey, KvWrite};
use wardlock_host::keyvalue::{KeyValueCtx, KvBuckets};
use wardlock_host::{LockBackend, LockName, LockPolicy, LockSession, Mode, WardlockCtx};
use wardlock_postgres::{PostgresBackend, PostgresConfig};
use wardlock_tests::TEST_WAIT_LIMIT;
use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::postgres::PgServer;
use wardlock_tests::probe::{HandoffProbe, LocalContenders, Probe};
use wardlock_tests::proxy::Proxy;
use wardlock_tests::zookeeper::ZkServer;
use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

const LOCK: &str = "write-gap";
const KEY: &str = "balance";
const KV_LOCK: &str = "write-gap-kv";

/// Polls `future` once and drops it: a call started and then abandoned.
fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut future = std::pin::pin!(future);
    future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
}

fn ctx(backend: &dyn LockBackend, owner: &str) -> WardlockCtx {
    WardlockCtx::new(backend, Arc::new(LockPolicy::new()), owner)
}

/// Guest A holds the lock and guest B of the same host waits for it; A sends
/// a write that the stalled proxy holds out, and A's instance ends. The
/// host's task must still count A as holding (B waiting behind it) while the
/// write is out; once the link recovers, B is granted, finds A's write
/// already there, and writes last with a greater token.
async fn a_write_out_keeps_the_next_local_guest_waiting<B>(
    engine: &str,
    backend: Arc<B>,
    proxy: &Proxy,
) where
    B: LockBackend + LocalContenders + 'static,
{
    let mut first = ctx(&*backend, "first guest");
    let held = first
        .acquire(LOCK, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("the first guest's grant");
    let holder = first.guarded_holder(&held).expect("an exclusive holder");
    let mut second = ctx(&*backend, "second guest");
    let waiting = tokio::spawn(async move {
        let granted = second
            .acquire(LOCK, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
            .await;
        (second, granted)
    });
    HandoffProbe(backend.clone()).wait_len(LOCK, 2).await;

    proxy.stall(true);
    // Polled once: the write is on its way (in a task of its own), then the
    // instance ends with it out, as a deadline or a trap ends one.
    let write = poll_once(first.guarded_put(holder, KEY, b"first"));
    assert!(
        write.is_pending(),
        "{engine}: the write answered through a stalled link"
    );
    first.drop_handle(held);
    drop(first);
    // Asked of the host's task after the release was sent to it: answered
    // by the host alone, in order.
    let lock = LockName::new(LOCK).expect("valid");
    assert_eq!(
        backend.local_contenders(&lock).await,
        2,
        "{engine}: the lock was handed to the next guest of the host while the first guest's write was still out"
    );
    assert!(
        !waiting.is_finished(),
        "{engine}: the second guest was granted"
    );

    proxy.stall(false);
    let (mut second, next) = waiting.await.expect("the second guest's task");
    let next = next.unwrap_or_else(|error| panic!("{engine}: the second guest's grant: {error}"));
    let found = second
        .guarded_get(LOCK, KEY)
        .await
        .expect("read")
        .unwrap_or_else(|| panic!("{engine}: the first guest's write is not there"));
    assert_eq!(found.value, b"first", "{engine}");
    assert!(found.token < next.fencing_token(), "{engine}: tokens");

    let holder = second.guarded_holder(&next).expect("an exclusive holder");
    second
        .guarded_put(holder, KEY, b"second")
        .await
        .unwrap_or_else(|error| panic!("{engine}: the second guest's write: {error}"));
    let last = second.guarded_get(LOCK, KEY).await.expect("read");
    let last = last.expect("an entry");
    assert_eq!(
        last.value, b"second",
        "{engine}: the last write is not the last holder's"
    );
    assert_eq!(last.token, next.fencing_token(), "{engine}");
    second.drop_handle(next);
}

/// The key-value twin: instance A's declared lock fences its key-value
/// writes (`KeyValueCtx::fenced`); B of the same host waits for the lock;
/// A's write is held out by the stalled proxy and A ends (its context and
/// its hold dropped). B must still wait; once the link recovers, B is
/// granted, finds A's write there, and its own fenced write is the last.
async fn a_key_value_write_out_keeps_the_next_local_guest_waiting<B>(
    engine: &str,
    backend: Arc<B>,
    proxy: &Proxy,
) where
    B: LockBackend + LocalContenders + 'static,
{
    let lock = LockName::new(KV_LOCK).expect("valid");
    let (bucket, key) = (Bucket::default(), KvKey::new(KEY).expect("key"));
    let first: Arc<dyn LockSession> = Arc::from(backend.open_session("first instance"));
    let held = first
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("the first instance's declared lock");
    let second: Arc<dyn LockSession> = Arc::from(backend.open_session("second instance"));
    let waiting = tokio::spawn({
        let (second, lock) = (second.clone(), lock.clone());
        async move {
            second
                .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
        }
    });
    HandoffProbe(backend.clone()).wait_len(KV_LOCK, 2).await;

    let names = [KV_LOCK.to_owned()];
    let kv = KeyValueCtx::fenced(first, vec![held.id], &names, KvBuckets::default());
    proxy.stall(true);
    let writes = [KvWrite::put(key.clone(), b"first".to_vec())];
    let write = poll_once(kv.write(&bucket, &writes));
    assert!(
        write.is_pending(),
        "{engine}: the write answered through a stalled link"
    );
    // The instance ends: its key-value context and its declared hold go.
    drop(kv);
    assert_eq!(
        backend.local_contenders(&lock).await,
        2,
        "{engine}: the declared lock was handed on while a key-value write was still out"
    );
    assert!(!waiting.is_finished(), "{engine}: the second was granted");

    proxy.stall(false);
    let next = waiting.await.expect("the second's task");
    let next = next.unwrap_or_else(|error| panic!("{engine}: the second's grant: {error}"));
    let store = second.key_value().expect("a key-value store");
    let found = store.kv_get(&bucket, &key).await.expect("read");
    assert_eq!(
        found.map(|e| e.value),
        Some(b"first".to_vec()),
        "{engine}: the first instance's write is not there"
    );
    let mine = [KvWrite::put(key.clone(), b"second".to_vec())];
    let written = store.kv_write(&bucket, &mine, &[next.id]).await;
    assert_eq!(written, Ok(KvCommit::Committed), "{engine}");
    let last = store.kv_get(&bucket, &key).await.expect("read");
    assert_eq!(last.map(|e| e.value), Some(b"second".to_vec()), "{engine}");
    second.release(next.id).expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_hands_off_only_after_a_write_out() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.address()).await;
    let config = ZooKeeperConfig::new(proxy.address())
        .root("/wardlock-gap")
        .session_timeout(Duration::from_secs(10))
        .local_handoff(LocalHandoff::default());
    let backend = ZooKeeperBackend::connect(config).await.expect("backend");
    let backend = Arc::new(backend);
    a_write_out_keeps_the_next_local_guest_waiting("zookeeper", backend.clone(), &proxy).await;
    a_key_value_write_out_keeps_the_next_local_guest_waiting("zookeeper", backend, &proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_hands_off_only_after_a_write_out() {
    let server = EtcdServer::start();
    let proxy = Proxy::start(server.address()).await;
    let config = EtcdConfig::new(&proxy.address())
        .root("/wardlock-gap")
        .lease_ttl(Duration::from_secs(10));
    let backend = EtcdBackend::connect(config).await.expect("backend");
    let backend = Arc::new(backend);
    a_write_out_keeps_the_next_local_guest_waiting("etcd", backend.clone(), &proxy).await;
    a_key_value_write_out_keeps_the_next_local_guest_waiting("etcd", backend, &proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_hands_off_only_after_a_write_out() {
    let server = PgServer::start();
    let proxy = Proxy::start(server.address()).await;
    let url = format!("postgres://wardlock@{}/wardlock", proxy.address());
    let config = PostgresConfig::new(&url).session_timeout(Duration::from_secs(10));
    let backend = PostgresBackend::connect(config).await.expect("backend");
    let backend = Arc::new(backend);
    a_write_out_keeps_the_next_local_guest_waiting("postgres", backend.clone(), &proxy).await;
    a_key_value_write_out_keeps_the_next_local_guest_waiting("postgres", backend, &proxy).await;
}
