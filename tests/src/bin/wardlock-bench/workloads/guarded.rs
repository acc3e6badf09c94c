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
//!
//! The same rounds time two writes of the key-value store (`wasi:keyvalue`,
//! issue 49) of the same size: a plain one (`KeyValue::kv_write` with no
//! fence; its row `write: kv-plain`, `p50_vs_floor` its ratio to the raw
//! write, target ≤ 1.2) and one fenced by the held lock (`write: kv-fenced`,
//! `fenced_vs_plain_p50` its ratio to the plain one, target ≤ 1.5).

use std::time::{Duration, Instant};

use anyhow::Context;
use wardlock_host::backend::keyvalue::{Bucket, KvCommit, KvKey, KvWrite};
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
        let timed = alternate(
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
        rows.extend(pair(System::ZkFloor, System::ZooKeeperNative, &timed));
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
        let timed = alternate(env, System::EtcdNative, session.as_ref(), &value, || {
            let mut client = client.clone();
            let value = value.clone();
            async move {
                client.put(ETCD_PLAIN_KEY, value, None).await?;
                Ok(())
            }
        })
        .await?;
        client.clone().delete(ETCD_PLAIN_KEY, None).await.ok();
        rows.extend(pair(System::EtcdFloor, System::EtcdNative, &timed));
    }
    Ok(rows)
}

/// The plain row (on the floor system), the guarded one and the two
/// key-value ones (on the native system), each with its ratios. No variant:
/// `add_ratios` pairs a row with its floor of the same variant.
fn pair(floor: System, native: System, timed: &Timed) -> [Row; 4] {
    let ratio = |of: &Samples, to: &Samples, q: f64| {
        let (o, t) = (of.percentile_us(q)?, to.percentile_us(q)?);
        (t > 0.0).then(|| o / t)
    };
    let native_row = |samples: &Samples, write: &'static str| {
        Row::new(native, Workload::Guarded, 1, samples)
            .with("write", write)
            .with("value_bytes", VALUE_BYTES as u64)
    };
    [
        Row::new(floor, Workload::Guarded, 1, &timed.plain)
            .with("write", "plain")
            .with("value_bytes", VALUE_BYTES as u64),
        native_row(&timed.guarded, "guarded")
            .with(
                "guarded_vs_plain_p50",
                round(ratio(&timed.guarded, &timed.plain, 0.5), 3),
            )
            .with(
                "guarded_vs_plain_p99",
                round(ratio(&timed.guarded, &timed.plain, 0.99), 3),
            ),
        native_row(&timed.kv_plain, "kv-plain"),
        native_row(&timed.kv_fenced, "kv-fenced").with(
            "fenced_vs_plain_p50",
            round(ratio(&timed.kv_fenced, &timed.kv_plain, 0.5), 3),
        ),
    ]
}

/// The latencies of each kind of write.
#[derive(Default)]
struct Timed {
    plain: Samples,
    guarded: Samples,
    kv_plain: Samples,
    kv_fenced: Samples,
}

/// `--ops` rounds of one plain write, one guarded put, one plain key-value
/// write and one fenced by the lock (holding the lock
/// `bench/guarded/<system>` in `session` throughout), each timed.
async fn alternate<F, Fut>(
    env: &Env,
    system: System,
    session: &dyn LockSession,
    value: &[u8],
    plain: F,
) -> anyhow::Result<Timed>
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
    let (bucket, kv_key) = (Bucket::new("bench")?, KvKey::new("value")?);
    let kv = session.key_value()?;
    let kv_writes = [KvWrite::put(kv_key.clone(), value.to_vec())];
    let mut timed = Timed::default();
    for _ in 0..env.args.ops {
        let started = Instant::now();
        plain().await.context("plain write")?;
        record(&mut timed.plain, started.elapsed());
        let started = Instant::now();
        session
            .guarded_store()
            .expect("guarded_store")
            .guarded_put(grant.id, &key, value)
            .await
            .context("guarded put")?;
        record(&mut timed.guarded, started.elapsed());
        for (fence, samples) in [
            (&[][..], &mut timed.kv_plain),
            (&[grant.id][..], &mut timed.kv_fenced),
        ] {
            let started = Instant::now();
            let committed = kv.kv_write(&bucket, &kv_writes, fence).await;
            anyhow::ensure!(
                committed == Ok(KvCommit::Committed),
                "key-value write: {committed:?}"
            );
            record(samples, started.elapsed());
        }
    }
    kv.kv_write(&bucket, &[KvWrite::delete(kv_key)], &[])
        .await
        .ok();
    session
        .guarded_store()
        .expect("guarded_store")
        .guarded_delete(grant.id, &key)
        .await
        .ok();
    session.release(grant.id).ok();
    Ok(timed)
}

fn record(samples: &mut Samples, took: Duration) {
    samples
        .latencies_ns
        .push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    samples.wall += took;
    samples.ops += 1;
}
