//! `etcd-floor`: the least work the etcd lock recipe needs (Go's
//! `concurrency.Mutex`, which `etcdctl lock` runs), on the raw `etcd-client`,
//! every request awaited before the next is sent:
//!
//! 1. one transaction: put `<lock>/<lease hex>` under the client's lease if
//!    absent, and list the lock's keys by create revision;
//! 2. held when no conflicting key was created before ours (a writer: none at
//!    all; a reader: no writer, readers' values marked as wardlock marks them);
//! 3. otherwise watch the nearest conflicting key's deletion, then list again;
//! 4. release: delete the key.
//!
//! Each client has its own lease (as separate processes would), kept alive
//! in the background. Keys live under `/wardlock-bench-etcd-floor`.

use anyhow::{Context, bail};
use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget,
    Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use wardlock_host::{LockName, Mode};

use super::native::Locker;

/// Where the floor's keys live.
pub(crate) const FLOOR_ROOT: &str = "/wardlock-bench-etcd-floor";

/// The value a reader's key holds (as wardlock's etcd backend writes it).
const SHARED: &[u8] = b"wardlock:shared";

/// One recipe client: one lease.
pub(crate) struct EtcdFloorClient {
    client: Client,
    lease: i64,
    held: Option<String>,
    _keep_alive: tokio::task::JoinHandle<()>,
}

impl EtcdFloorClient {
    /// Connects and grants the client's lease (TTL `ttl_secs`).
    ///
    /// # Errors
    /// When etcd cannot be reached.
    pub(crate) async fn connect(address: &str, ttl_secs: i64) -> anyhow::Result<Self> {
        let endpoints: Vec<String> = address.split(',').map(|a| format!("http://{a}")).collect();
        let mut client = Client::connect(endpoints, None)
            .await
            .with_context(|| format!("etcd-floor cannot connect to {address}"))?;
        let lease = client.lease_grant(ttl_secs, None).await?.id();
        let (mut keeper, mut answers) = client.lease_keep_alive(lease).await?;
        let every = std::time::Duration::from_secs(u64::try_from(ttl_secs / 3).unwrap_or(1).max(1));
        let keep_alive = tokio::spawn(async move {
            loop {
                if keeper.keep_alive().await.is_err()
                    || !matches!(answers.message().await, Ok(Some(_)))
                {
                    return;
                }
                tokio::time::sleep(every).await;
            }
        });
        Ok(EtcdFloorClient {
            client,
            lease,
            held: None,
            _keep_alive: keep_alive,
        })
    }
}

fn conflicts(mine: Mode, other: &KeyValue) -> bool {
    mine == Mode::Exclusive || other.value() != SHARED
}

impl Locker for EtcdFloorClient {
    async fn acquire(&mut self, lock: &LockName, mode: Mode) -> anyhow::Result<()> {
        let prefix = format!("{FLOOR_ROOT}/{}/", lock.as_str().replace('/', "%2F"));
        let key = format!("{prefix}{:x}", self.lease);
        let value: &[u8] = if mode == Mode::Shared { SHARED } else { b"" };
        let listing = || {
            GetOptions::new()
                .with_prefix()
                .with_sort(SortTarget::Create, SortOrder::Ascend)
        };
        let txn = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([
                TxnOp::put(
                    key.as_str(),
                    value,
                    Some(PutOptions::new().with_lease(self.lease)),
                ),
                TxnOp::get(prefix.as_str(), Some(listing())),
            ])
            .or_else([TxnOp::get(prefix.as_str(), Some(listing()))]);
        let answer = self.client.txn(txn).await?;
        let mut revision = answer.header().map_or(0, |h| h.revision());
        let mut listed = Vec::new();
        for op in answer.op_responses() {
            if let TxnOpResponse::Get(mut got) = op {
                listed = got.take_kvs();
            }
        }
        let mine = listed
            .iter()
            .find(|kv| kv.key() == key.as_bytes())
            .map(KeyValue::create_revision)
            .context("etcd-floor: own key missing")?;
        loop {
            let blocker = listed
                .iter()
                .filter(|kv| kv.create_revision() < mine && conflicts(mode, kv))
                .max_by_key(|kv| kv.create_revision())
                .map(|kv| kv.key().to_vec());
            let Some(blocker) = blocker else {
                self.held = Some(key);
                return Ok(());
            };
            let options = WatchOptions::new().with_start_revision(revision + 1);
            let mut stream = self.client.watch(blocker, Some(options)).await?;
            'watch: while let Some(answer) = stream.message().await? {
                if answer
                    .events()
                    .iter()
                    .any(|e| e.event_type() == EventType::Delete)
                {
                    break 'watch;
                }
            }
            let options = GetOptions::new()
                .with_prefix()
                .with_max_create_revision(mine - 1)
                .with_sort(SortTarget::Create, SortOrder::Ascend);
            let mut answer = self.client.get(prefix.as_str(), Some(options)).await?;
            revision = answer.header().map_or(0, |h| h.revision());
            listed = answer.take_kvs();
        }
    }

    async fn release(&mut self) -> anyhow::Result<()> {
        let Some(key) = self.held.take() else {
            bail!("release without a grant");
        };
        self.client.delete(key, None).await?;
        Ok(())
    }
}
