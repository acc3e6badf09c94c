//! `guarded`: what fencing a write costs (issue 35). One client, uncontended,
//! on each engine: a guarded put (`GuardedStore::guarded_put` of wardlock's
//! backend, holding the lock: ZooKeeper one `multi` checking the holder's
//! node and writing the entry; etcd one transaction comparing the holder
//! key's create revision) against a plain write of the same value on the same
//! server (ZooKeeper: a raw `set_data` on one node; etcd: a raw `put`). The
//! two alternate op by op, so drift of the server hits both alike. The plain
//! write is the floor system's row (`zk-floor`, `etcd-floor`), the guarded
//! one the native system's (`wardlock-native`, `etcd-native`), so
//! `p50_vs_floor` of the latter is guarded ÷ plain (issue 35's target: ≤ 1.5).

use std::time::{Duration, Instant};

use anyhow::Context;
use wardlock_host::backend::{GuardedKey, LockSession};
use wardlock_host::{LockBackend, Mode};
use zookeeper_client::{Acls, CreateMode, Error as ZkError};

use super::{Workload, lock_name, progress};
use crate::env::Env;
use crate::report::{Row, round};
use crate::stats::Samples;
use crate::systems::System;
use crate::systems::zk_floor::{FLOOR_ROOT, FloorClient};

/// The bytes each write carries (both sides).
pub(super) const VALUE_BYTES: usize = 256;

/// Where the plain ZooKeeper write goes (under the floor's root, which the
/// run removes at its end).
const ZK_PLAIN_NODE: &str = "/wardlock-bench-floor/guarded-plain";

/// The plain etcd key.
const ETCD_PLAIN_KEY: &str = "/wardlock-bench-etcd-floor/guarded-plain";

/// Runs the workload: one (plain, guarded) pair of rows per engine selected.
///
/// # Errors
/// When a write fails or the lock cannot be taken.
pub(super) async fn run(env: &Env, systems: &[System]) -> anyhow::Result<Vec<Row>> {
    let ops = env.args.ops;
    let value = vec![b'v'; VALUE_BYTES];
    let mut rows = Vec::new();
    let zk = systems.contains(&System::ZkFloor) || systems.contains(&System::ZooKeeperNative);
    if zk {
        progress(&format!(
            "guarded: ZooKeeper ({ops} plain and {ops} guarded writes)"
        ));
        let zk_env = env.zk()?;
        let plain = FloorClient::connect(&zk_env.address, zk_env.session_timeout).await?;
        let client = plain.client();
        let container = CreateMode::Container.with_acls(Acls::anyone_all());
        client.mkdir(FLOOR_ROOT, &container).await.ok();
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        match client.create(ZK_PLAIN_NODE, &value, &persistent).await {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(error) => return Err(error).context("creating the plain node"),
        }
        let session = zk_env.backend.open_session("wardlock-bench guarded");
        let (plain_samples, guarded_samples) = alternate(
            env,
            System::ZooKeeperNative,
            session.as_ref(),
            &value,
            || async {
                client.set_data(ZK_PLAIN_NODE, &value, None).await?;
                Ok(())
            },
        )
        .await?;
        rows.extend(pair(
            System::ZkFloor,
            System::ZooKeeperNative,
            &plain_samples,
            &guarded_samples,
        ));
    }
    let etcd = systems.contains(&System::EtcdFloor) || systems.contains(&System::EtcdNative);
    if etcd {
        progress(&format!(
            "guarded: etcd ({ops} plain and {ops} guarded writes)"
        ));
        let etcd_env = env.etcd()?;
        let endpoints: Vec<String> = etcd_env
            .address
            .split(',')
            .map(|a| format!("http://{a}"))
            .collect();
        let client = etcd_client::Client::connect(endpoints, None)
            .await
            .context("connecting the plain etcd client")?;
        let session = etcd_env.backend.open_session("wardlock-bench guarded");
        let (plain_samples, guarded_samples) =
            alternate(env, System::EtcdNative, session.as_ref(), &value, || {
                let mut client = client.clone();
                let value = value.clone();
                async move {
                    client.put(ETCD_PLAIN_KEY, value, None).await?;
                    Ok(())
                }
            })
            .await?;
        client.clone().delete(ETCD_PLAIN_KEY, None).await.ok();
        rows.extend(pair(
            System::EtcdFloor,
            System::EtcdNative,
            &plain_samples,
            &guarded_samples,
        ));
    }
    Ok(rows)
}

/// The plain row (on the floor system) and the guarded one (on the native
/// system), the latter with its p50 and p99 over the plain ones. No
/// variant: `add_ratios` pairs a row with its floor of the same variant.
fn pair(floor: System, native: System, plain: &Samples, guarded: &Samples) -> [Row; 2] {
    let ratio = |q: f64| {
        let (g, p) = (guarded.percentile_us(q)?, plain.percentile_us(q)?);
        (p > 0.0).then(|| g / p)
    };
    [
        Row::new(floor, Workload::Guarded, 1, plain)
            .with("write", "plain")
            .with("value_bytes", VALUE_BYTES as u64),
        Row::new(native, Workload::Guarded, 1, guarded)
            .with("write", "guarded")
            .with("value_bytes", VALUE_BYTES as u64)
            .with("guarded_vs_plain_p50", round(ratio(0.5), 3))
            .with("guarded_vs_plain_p99", round(ratio(0.99), 3)),
    ]
}

/// `--ops` rounds of one plain write then one guarded put (holding the
/// lock `bench/guarded/<system>` in `session` throughout), each timed.
async fn alternate<F, Fut>(
    env: &Env,
    system: System,
    session: &dyn LockSession,
    value: &[u8],
    plain: F,
) -> anyhow::Result<(Samples, Samples)>
where
    F: Fn() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let lock = lock_name(Workload::Guarded, system, "")?;
    let grant = session
        .acquire(&lock, Mode::Exclusive, Some(Duration::from_secs(30)))
        .await
        .with_context(|| format!("taking {lock}"))?;
    let key = GuardedKey::new("value")?;
    let mut plain_samples = Samples::default();
    let mut guarded_samples = Samples::default();
    for _ in 0..env.args.ops {
        let started = Instant::now();
        plain().await.context("plain write")?;
        record(&mut plain_samples, started.elapsed());
        let started = Instant::now();
        session
            .guarded_store()
            .expect("guarded_store")
            .guarded_put(grant.id, &key, value)
            .await
            .context("guarded put")?;
        record(&mut guarded_samples, started.elapsed());
    }
    session
        .guarded_store()
        .expect("guarded_store")
        .guarded_delete(grant.id, &key)
        .await
        .ok();
    session.release(grant.id).ok();
    Ok((plain_samples, guarded_samples))
}

fn record(samples: &mut Samples, took: Duration) {
    samples
        .latencies_ns
        .push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    samples.wall += took;
    samples.ops += 1;
}
