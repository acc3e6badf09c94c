//! Jepsen's `lock-set` under a nemesis (issue 35), short form: 3 `wardlock
//! run` hosts × 2 `plugins/lock-set` guests add unique elements to one set
//! under one lock, read-modify-write, while the nemesis stops the holder's
//! host (SIGSTOP) inside its read-to-write window past its 2 s session,
//! until another host has written, and kills one holder's host in the run
//! (`wardlock_tests::lock_set`). On real ZooKeeper and etcd servers (one of
//! each, shared by the four cases, which run at once), and on a Redis server
//! (its two cases in a test of their own):
//!
//! - `plain` (a shared file, nothing fences the write): the resumed holder
//!   writes its stale set over the next holder's, so acknowledged adds are
//!   lost — this proves the nemesis bites;
//! - `guarded` (the guarded store): the resumed holder's write is refused
//!   with `lost`, and not one acknowledged add is lost; the writes committed
//!   in token order and no two guests held the lock at once unless one was
//!   told `lost`.

use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::lock_set::history::Variant;
use wardlock_tests::lock_set::{Scenario, Totals, run_rounds};
use wardlock_tests::redis_server::{Flavor, RedisServer};
use wardlock_tests::zookeeper::ZkServer;

/// Rounds per engine and variant: two faults each, so four faults per case
/// and the fourth a kill (`Scenario::kill_every` counts over rounds).
const ROUNDS: u64 = 2;

async fn case(engine: Vec<String>, name: &str, variant: Variant) -> Totals {
    let scenario = Scenario {
        kill_every: 4,
        ..Scenario::new(engine, variant)
    };
    let totals = run_rounds(&scenario, &format!("e2e/{name}/{}", variant.name()), ROUNDS)
        .await
        .unwrap_or_else(|e| panic!("{name} {}: {e:#}", variant.name()));
    eprintln!(
        "lock-set {name} {}: {:?}, {} pauses, {} kills, {:.1} s",
        variant.name(),
        totals.counts,
        totals.pauses,
        totals.kills,
        totals.wall.as_secs_f64()
    );
    for line in &totals.timeline {
        eprintln!("  {line}");
    }
    totals
}

fn assert_guarded(name: &str, totals: &Totals) {
    let counts = &totals.counts;
    assert_eq!(
        totals.pauses + totals.kills,
        2 * ROUNDS,
        "{name}: the nemesis struck every time"
    );
    assert!(counts.acknowledged > 0, "{name}: {counts:?}");
    assert_eq!(counts.lost, 0, "{name}: {counts:?} {:#?}", totals.problems);
    assert_eq!(
        counts.violations(),
        0,
        "{name}: {counts:?} {:#?}",
        totals.problems
    );
    assert!(
        counts.stale_refused > 0,
        "{name}: a paused holder's write was refused: {counts:?}"
    );
    assert_eq!(counts.malformed, 0, "{name}: {counts:?}");
}

fn assert_plain(name: &str, totals: &Totals) {
    let counts = &totals.counts;
    assert_eq!(totals.pauses + totals.kills, 2 * ROUNDS, "{name}");
    assert!(
        counts.lost > 0,
        "{name}: without fencing, the resumed holder overwrote an acknowledged add: {counts:?}"
    );
    assert_eq!(
        counts.overlaps, 0,
        "{name}: {counts:?} {:#?}",
        totals.problems
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_sets_lose_no_acknowledged_add_under_pauses_and_plain_ones_do() {
    let zookeeper = ZkServer::start();
    let etcd = EtcdServer::start();
    let zk = || vec!["--zookeeper".to_owned(), zookeeper.address()];
    let et = || vec!["--etcd".to_owned(), etcd.address()];
    let (zk_plain, zk_guarded, etcd_plain, etcd_guarded) = tokio::join!(
        case(zk(), "zookeeper", Variant::Plain),
        case(zk(), "zookeeper", Variant::Guarded),
        case(et(), "etcd", Variant::Plain),
        case(et(), "etcd", Variant::Guarded),
    );
    assert_guarded("zookeeper guarded", &zk_guarded);
    assert_guarded("etcd guarded", &etcd_guarded);
    assert_plain("zookeeper plain", &zk_plain);
    assert_plain("etcd plain", &etcd_plain);
}

/// The same nemesis on Valkey/Redis (issue 51): a `redis-server` with AOF,
/// the plain and guarded cases at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_sets_on_valkey_lose_no_acknowledged_add_under_pauses() {
    let server = RedisServer::start(Flavor::Redis);
    let redis = || vec!["--redis".to_owned(), server.url()];
    let (plain, guarded) = tokio::join!(
        case(redis(), "redis", Variant::Plain),
        case(redis(), "redis", Variant::Guarded),
    );
    assert_guarded("redis guarded", &guarded);
    assert_plain("redis plain", &plain);
}
