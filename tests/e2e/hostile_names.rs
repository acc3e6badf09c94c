//! Names cannot block other locks: a guest holding nested names under lock `m`
//! (whose directories sit in `m`'s queue directory) never holds up `m`'s
//! contenders, in any dialect, nor a real Curator `InterProcessMutex` on `m`;
//! names that could pass for lock nodes are refused.

use std::time::{Duration, Instant};

use wardlock_host::{LockBackend, LockName, Mode};
use wardlock_tests::TEST_WAIT_LIMIT;
use wardlock_tests::interop::Foreign;
use wardlock_tests::name;
use wardlock_tests::zookeeper::ZkServer;
use wardlock_zookeeper::{Dialect, ZooKeeperBackend, ZooKeeperConfig};

const ROOT: &str = "/wardlock-hostile";

/// Accepted nested names under `m`, chosen to sort and look as close to lock
/// nodes as the rule allows.
const NESTED: &[&str] = &[
    "m/x",
    "m/clock-tower",
    "m/_c_x",
    "m/Z9",
    "m/a__WRIT__b",
    "m/_",
];
/// Names that would pass for lock nodes in `m`'s queue: refused.
const HOSTILE: &[&str] = &["m/x__WRIT__0", "m/lock-0", "m/0", "m/-x", "m/a__READ__1"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_names_never_block_their_parent_lock() {
    for hostile in HOSTILE {
        assert!(LockName::new(hostile).is_err(), "{hostile} accepted");
    }
    let server = ZkServer::start();
    for dialect in Dialect::ALL {
        let config = ZooKeeperConfig::new(server.address())
            .root(ROOT)
            .dialect(dialect);
        let backend = ZooKeeperBackend::connect(config).await.expect("backend");
        let squatter = backend.open_session("squatter");
        let mut held = Vec::new();
        for nested in NESTED {
            let grant = squatter
                .acquire(&name(nested), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
                .expect("nested lock");
            held.push(grant);
        }
        // Two contenders take `m` in turn, twice each, while the nested locks are held.
        let started = Instant::now();
        let mut contenders = Vec::new();
        for i in 0..2 {
            let backend = backend.clone();
            contenders.push(tokio::spawn(async move {
                let session = backend.open_session(&format!("contender {i}"));
                for _ in 0..2 {
                    let grant = session
                        .acquire(&name("m"), Mode::Exclusive, Some(Duration::from_secs(5)))
                        .await
                        .expect("m is not blocked");
                    session.release(grant.id).expect("release");
                }
            }));
        }
        for contender in contenders {
            contender.await.expect("contender");
        }
        let elapsed = started.elapsed();
        eprintln!(
            "{{\"metric\":\"nested_contenders_ms\",\"dialect\":\"{dialect}\",\"value\":{}}}",
            elapsed.as_millis()
        );
        assert!(elapsed < Duration::from_secs(2), "{dialect}: {elapsed:?}");
        // A real Curator InterProcessMutex on `m` is not blocked either.
        let mut curator =
            Foreign::curator(&server.address(), &format!("{ROOT}/m"), "mutex", &["try"]);
        curator.expect("acquired").await;
        curator.release().await;
        curator.finish().await;
        // `wardlock status m` lists the nested directories apart, never as holders.
        let queue = backend.queue(&name("m")).await.expect("queue");
        assert!(
            queue.iter().all(|n| n.mode.is_none() && !n.holds),
            "{queue:?}"
        );
        for grant in held {
            squatter.release(grant.id).expect("release");
        }
    }
}
