//! The guarded store on ZooKeeper against a real server: a holder whose lock
//! node is gone on the server without its noticing (an operator's delete, a
//! session the server expired while the host was paused) cannot write: the
//! server itself refuses the `multi` whose first operation checks the node,
//! with and without host-local hand-off. Entries live under
//! `<root>/%data/`, apart from every lock's queue, and a store emptied by
//! deletes leaves no node behind.

use wardlock_host::backend::GuardedKey;
use wardlock_host::{BackendError, LockBackend, LockName, Mode};
use wardlock_tests::zookeeper::{ZkServer, backend_under, delete_the_holder_node};
use wardlock_tests::{TEST_WAIT_LIMIT, name};
use zookeeper_client::Client;

const ROOT: &str = "/wardlock-guarded";

/// A plain client, acting behind the hosts' backs.
async fn raw(server: &ZkServer) -> Client {
    Client::connect(&server.address()).await.expect("client")
}

fn key(text: &str) -> GuardedKey {
    GuardedKey::new(text).expect("valid key")
}

/// Host A holds `lock` and writes; its node is deleted on the server (A is
/// not told); host B takes the lock and writes; A's next write is refused by
/// the server with `Lost` and the entry is B's. Then B deletes the entry and
/// nothing of the store is left.
async fn a_write_whose_node_is_gone_is_refused(handoff: bool) {
    let server = ZkServer::start();
    let (a, b) = (
        backend_under(&server, ROOT, handoff).await,
        backend_under(&server, ROOT, handoff).await,
    );
    let client = raw(&server).await;
    let lock = name(if handoff {
        "fence-handoff"
    } else {
        "fence-own"
    });
    let k = key("state");

    let holder = a.open_session("a");
    let held = holder
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("a acquires");
    holder
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(held.id, &k, b"a1")
        .await
        .expect("a writes");
    let queue = format!("{ROOT}/{lock}");
    delete_the_holder_node(&client, &queue).await;

    let next = b.open_session("b");
    let granted = next
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("b acquires");
    assert!(granted.token > held.token, "{granted:?} after {held:?}");
    next.guarded_store()
        .expect("guarded_store")
        .guarded_put(granted.id, &k, b"b1")
        .await
        .expect("b writes");

    let stale = holder
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(held.id, &k, b"a2")
        .await;
    assert_eq!(stale, Err(BackendError::Lost), "a's stale write");
    let stale_delete = holder
        .guarded_store()
        .expect("guarded_store")
        .guarded_delete(held.id, &k)
        .await;
    assert_eq!(stale_delete, Err(BackendError::Lost), "a's stale delete");
    let entry = next
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&lock, &k)
        .await
        .expect("get")
        .expect("the entry");
    assert_eq!(
        (entry.value.as_slice(), entry.token),
        (&b"b1"[..], granted.token)
    );

    assert_eq!(
        next.guarded_store()
            .expect("guarded_store")
            .guarded_delete(granted.id, &k)
            .await,
        Ok(true)
    );
    let data = format!("{ROOT}/%data");
    // Empty, or gone already: the room is a container node, which the server
    // removes on its own once it is empty.
    let left = match client.get_children(&data).await {
        Ok((left, _)) => left,
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        Err(error) => panic!("the data room: {error}"),
    };
    assert!(
        left.is_empty(),
        "an emptied store left {left:?} under {data}"
    );
    let (queues, _) = client.get_children(ROOT).await.expect("the root");
    assert!(
        queues
            .iter()
            .all(|q| q == "%data" || LockName::new(q).is_ok()),
        "only lock queues and the data room under the root: {queues:?}"
    );
    next.release(granted.id).expect("release");
    drop(holder);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_refuses_a_write_whose_node_is_gone() {
    a_write_whose_node_is_gone_is_refused(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_refuses_a_handoff_write_whose_node_is_gone() {
    a_write_whose_node_is_gone_is_refused(true).await;
}
