//! Who holds a lock and who waits: the contenders of a lock as etcd has them,
//! for operators (`wardlock status --etcd`): wardlock's hosts, `etcdctl lock`
//! and Go's `concurrency.Mutex` alike.

use etcd_client::{GetOptions, SortOrder, SortTarget};

use super::errors::classify;
use super::layout::{conflicts, mode_of, prefix};
use super::{EtcdBackend, Shared};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Mode};

/// One contender for a lock: a key under its prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdContender {
    /// The whole key (`<root>/<name>/<lease hex>`).
    pub key: String,
    /// Exclusive unless the value marks a wardlock reader.
    pub mode: Mode,
    /// True if it holds the lock now.
    pub holds: bool,
    /// The lease it lives under (0: none, it stays until deleted).
    pub lease: i64,
    /// Its create revision: its place in the queue, and its fencing token.
    pub revision: i64,
}

impl EtcdBackend {
    /// The contenders of lock `name` in queue order (holders first); empty
    /// when nobody holds or waits. Grants no lease: it only reads.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when etcd cannot be reached;
    /// [`BackendError::Refused`] when it refused this host.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub async fn queue(&self, name: &LockName) -> Result<Vec<EtcdContender>, BackendError> {
        contenders(&self.shared, name).await
    }
}

/// [`EtcdBackend::queue`] on the backend's shared state.
///
/// # Errors
/// As [`EtcdBackend::queue`].
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn contenders(
    shared: &Shared,
    name: &LockName,
) -> Result<Vec<EtcdContender>, BackendError> {
    let config = shared.leases.config();
    let mut client = shared.leases.client().await?;
    let prefix = prefix(&config.root, name);
    let options = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend);
    let listed = tokio::time::timeout(
        config.connect_timeout,
        client.get(prefix.as_str(), Some(options)),
    )
    .await
    .map_err(|_| {
        BackendError::Unavailable(format!(
            "etcd did not answer within {:?}",
            config.connect_timeout
        ))
    })?
    .map_err(|e| classify(&e, "list a lock's contenders"))?;
    let mut contenders: Vec<EtcdContender> = Vec::with_capacity(listed.kvs().len());
    for kv in listed.kvs() {
        let mode = mode_of(kv.value());
        let holds = contenders
            .iter()
            .all(|earlier| !conflicts(mode, earlier.mode));
        contenders.push(EtcdContender {
            key: String::from_utf8_lossy(kv.key()).into_owned(),
            mode,
            holds,
            lease: kv.lease(),
            revision: kv.create_revision(),
        });
    }
    Ok(contenders)
}
