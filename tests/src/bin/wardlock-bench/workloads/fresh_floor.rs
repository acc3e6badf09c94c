//! The floor under `wit-v3`'s 64-at-once gain: what ZooKeeper itself takes to
//! serve the requests of `count` fresh locks at once, with no host in
//! between (the raw `zookeeper-client`), spread over as many sessions as
//! the host's pool opens (`AUTO_SESSIONS`, lock `i` on session `i` mod
//! that), so the floor is not held to one session's order where the host
//! is not. Per lock, what wardlock's
//! recipe sends for a name whose parent does not exist yet
//! (`host/zookeeper/src/recipe/create.rs`): its node's create and the
//! parent's listing in one round trip, refused for want of the parent; the
//! parent made (ancestors first, as containers); the create and the listing
//! again. The locks' requests go out together, as the host's do. Each
//! round's nodes are deleted after its time is taken.

use std::time::Instant;

use anyhow::{Context, bail};
use futures_util::future::try_join_all;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

/// `count` fresh locks `{root}/{prefix}/l{i}` taken at once as wardlock's
/// recipe takes a fresh lock: the time from the first request to the last
/// listing, in milliseconds.
///
/// # Errors
/// When ZooKeeper refuses a request the recipe would not see refused.
pub(super) async fn fresh_locks_at_once(
    clients: &[Client],
    root: &str,
    prefix: &str,
    count: u64,
) -> anyhow::Result<f64> {
    let client_of = |i: u64| &clients[usize::try_from(i).unwrap_or(0) % clients.len()];
    let started = Instant::now();
    let nodes = try_join_all((0..count).map(|i| fresh_lock(client_of(i), root, prefix, i))).await?;
    let elapsed = started.elapsed().as_secs_f64() * 1e3;
    for (i, node) in (0..count).zip(nodes) {
        client_of(i)
            .delete(&node, None)
            .await
            .with_context(|| format!("deleting {node}"))?;
    }
    Ok(elapsed)
}

/// One fresh lock's requests; its node's path.
async fn fresh_lock(client: &Client, root: &str, prefix: &str, i: u64) -> anyhow::Result<String> {
    let parent = format!("{root}/{prefix}/l{i}");
    let node = format!("{parent}/_c_floor-lock-");
    let ephemeral = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (created, listed) = tokio::join!(
        client.create(&node, &[], &ephemeral),
        client.get_children(&parent)
    );
    match (created, listed) {
        (Err(ZkError::NoNode), Err(ZkError::NoNode)) => {}
        (created, _) => bail!("{parent} was not fresh: the first create gave {created:?}"),
    }
    let container = CreateMode::Container.with_acls(Acls::anyone_all());
    client
        .mkdir(&parent, &container)
        .await
        .with_context(|| format!("making {parent}"))?;
    let (created, listed) = tokio::join!(
        client.create(&node, &[], &ephemeral),
        client.get_children(&parent)
    );
    let (_, sequence) = created.with_context(|| format!("creating under {parent}"))?;
    listed.with_context(|| format!("listing {parent}"))?;
    Ok(format!("{node}{sequence}"))
}
