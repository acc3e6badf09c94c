//! The Valkey/Redis engine behind Sentinel, against real processes the
//! tests start on loopback ports and stop: a primary, its replica and three
//! Sentinels (quorum 2) of Debian's `redis-server` 7.0. A failover (the
//! primary killed, the replica promoted) tells every holder `lost` before
//! anyone is granted on the new primary, whose tokens continue above the
//! old ones; the old primary, back, is made a replica and no host follows
//! it; and failovers under contention keep the history checker's rules.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::{GrantStatus, LockBackend, Mode};
use wardlock_tests::redis_sentinel::{MASTER, SentinelGroup};
use wardlock_tests::redis_server::Flavor;
use wardlock_tests::{TEST_WAIT_LIMIT, name};
use wardlock_valkey::{TOKEN_JUMP, ValkeyBackend, ValkeyConfig};

/// The session timeout of these hosts.
const SESSION: Duration = Duration::from_secs(2);

/// How long a failover may take: the Sentinels' one second of silence,
/// their vote, the promotion.
const FAILOVER_LIMIT: Duration = Duration::from_secs(30);

/// A host that finds the primary through `group`'s Sentinels.
async fn host(group: &SentinelGroup) -> ValkeyBackend {
    ValkeyBackend::connect(
        ValkeyConfig::new("redis://primary")
            .sentinel(group.addresses(), MASTER)
            .session_timeout(SESSION),
    )
    .await
    .expect("a host through the Sentinels")
}

/// Kills the server at `index` and waits (bounded) until every Sentinel
/// names another primary that says it is one; its index.
fn fail_over(group: &mut SentinelGroup, index: usize) -> usize {
    tokio::task::block_in_place(|| {
        group.servers[index].kill();
        group.wait_until(FAILOVER_LIMIT, "the Sentinels promote the replica", |g| {
            g.agreed_primary().is_some_and(|p| p != index)
        });
        group.agreed_primary().expect("agreed above")
    })
}

/// The holder is told `lost` before the waiting host is granted (order,
/// not a margin), the grant is on the promoted replica, and its token is
/// above the old holder's by the jump; the old primary, restarted with its
/// old data, is made a replica by the Sentinels, and new locks are granted
/// on the new primary alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_ends_every_grant_before_the_new_primary_grants() {
    let mut group = SentinelGroup::start(Flavor::Redis);
    let (a, b) = (host(&group).await, host(&group).await);
    let lock = name("failover");
    let holder: Arc<dyn wardlock_host::LockSession> = a.open_session("holder").into();
    let held = holder
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted on the first primary");
    let waiter = b.open_session("waiter");
    let waiting = tokio::spawn(async move {
        let grant = waiter
            .acquire(&name("failover"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
            .await;
        (Instant::now(), grant, waiter)
    });
    let lost = tokio::spawn({
        let holder = holder.clone();
        async move {
            let mut seen = GrantStatus::Held;
            while seen != GrantStatus::Lost {
                seen = holder.status_changed(held.id, seen).await;
            }
            Instant::now()
        }
    });

    let primary = fail_over(&mut group, 0);
    assert_eq!(primary, 1, "the replica is promoted");
    let lost_at = tokio::time::timeout(TEST_WAIT_LIMIT, lost)
        .await
        .expect("the holder is told lost")
        .expect("watcher");
    let (granted_at, grant, waiter) = tokio::time::timeout(TEST_WAIT_LIMIT, waiting)
        .await
        .expect("the waiter is granted")
        .expect("waiter task");
    let grant = grant.expect("granted on the new primary");
    assert!(
        lost_at < granted_at,
        "granted {:?} before the holder was told lost",
        lost_at - granted_at
    );
    assert!(
        grant.token > held.token + (TOKEN_JUMP << 15),
        "token {} after {}: no jump",
        grant.token,
        held.token
    );
    let on_new = group.servers[1].cli(&["GET", "/wardlock/failover"]);
    assert!(on_new.starts_with("wardlock:"), "{on_new}");
    waiter.release(grant.id).expect("release");

    // The old primary comes back with its old data; the Sentinels make it a
    // replica, and no host follows it.
    tokio::task::block_in_place(|| {
        group.servers[0].restart();
        group.wait_until(FAILOVER_LIMIT, "the old primary becomes a replica", |g| {
            g.servers[0].cli(&["ROLE"]).starts_with("slave")
        });
    });
    let again = holder
        .acquire(&name("after"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted after the failover");
    let on_new = group.servers[1].cli(&["GET", "/wardlock/after"]);
    assert!(on_new.starts_with("wardlock:"), "{on_new}");
    holder.release(again.id).expect("release");
    drop(holder);
    a.shutdown().await;
    b.shutdown().await;
}

/// Two failovers (the primary killed, later the promoted one) while two
/// hosts × four workers contend for one lock, through the one history
/// checker: no two holders at once before one was told `lost`, tokens
/// rising across the failovers, no update lost but by a holder told
/// `lost`. A worker's wait cut by a failover queues again by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failovers_under_contention_keep_the_checker_s_rules() {
    use wardlock_tests::chaos::Contention;
    let mut group = SentinelGroup::start(Flavor::Redis);
    let mut hosts: Vec<Arc<dyn LockBackend>> = Vec::new();
    for _ in 0..2 {
        hosts.push(Arc::new(host(&group).await));
    }
    let contention = Contention::start(&hosts, 4, "sentinel-chaos", Duration::from_secs(30));
    let mut failovers = 0;
    let mut primary = 0;
    for _ in 0..2 {
        contention.until_next_turn(0).await;
        contention.until_next_turn(1).await;
        let promoted = fail_over(&mut group, primary);
        // The killed one comes back as a replica, so the next failover has
        // a server to promote.
        tokio::task::block_in_place(|| {
            group.servers[primary].restart();
            group.wait_until(FAILOVER_LIMIT, "the old primary becomes a replica", |g| {
                g.in_sync(primary)
            });
        });
        primary = promoted;
        failovers += 1;
    }
    contention.until_next_turn(0).await;
    contention.until_next_turn(1).await;
    let report = contention.finish().await;
    for host in &hosts {
        host.shutdown().await;
    }
    eprintln!(
        "{{\"metric\":\"valkey_sentinel_failovers\",\"failovers\":{failovers},{}}}",
        report.json_fields()
    );
    report.assert_safe();
    assert!(
        report.lost_updates <= report.told_lost,
        "lost updates beyond the holds told lost: {report:?}"
    );
}
