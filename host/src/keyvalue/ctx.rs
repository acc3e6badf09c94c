//! One instance's key-value context: where its calls go (a lock session,
//! opened on first use unless the declared locks' own session is given), the
//! fence its writes carry, and the buckets it may open.

use std::sync::{Arc, OnceLock};

use super::KvBuckets;
use crate::backend::keyvalue::{Bucket, KeyValue, KvCommit, KvWrite};
use crate::backend::{BackendError, GrantId, LockBackend, LockSession};

/// The `bucket` resource: a bucket this instance opened.
#[derive(Debug)]
pub struct BucketHandle {
    pub(crate) bucket: Bucket,
}

/// The `cas` resource (0.2.0-draft2): `key`'s value and engine version
/// when the handle was made (`None`: absent), which `swap` expects still.
#[derive(Debug)]
pub struct CasHandle {
    pub(crate) bucket: Bucket,
    pub(crate) key: String,
    pub(crate) current: Option<Vec<u8>>,
    pub(crate) version: Option<u64>,
}

/// Where an instance's key-value calls go.
enum Sessions {
    /// A session of its own, opened at the first call (an instance that
    /// never touches the store costs the engine nothing).
    OnFirstUse {
        backend: Arc<dyn LockBackend>,
        owner: String,
        opened: OnceLock<Arc<dyn LockSession>>,
    },
    /// The session holding the fence's grants.
    Given(Arc<dyn LockSession>),
}

/// Per-instance state of the key-value capability.
pub struct KeyValueCtx {
    sessions: Sessions,
    fence: Vec<GrantId>,
    /// The declared locks' names, for the error of a write the fence refused.
    fence_names: String,
    buckets: KvBuckets,
}

impl KeyValueCtx {
    /// A context whose writes are plain (last writer wins), on a session of
    /// `backend` owned by `owner`, opened at the first call.
    pub fn new(backend: Arc<dyn LockBackend>, owner: &str, buckets: KvBuckets) -> KeyValueCtx {
        KeyValueCtx {
            sessions: Sessions::OnFirstUse {
                backend,
                owner: format!("{owner} (key-value)"),
                opened: OnceLock::new(),
            },
            fence: Vec::new(),
            fence_names: String::new(),
            buckets,
        }
    }

    /// A context whose every write commits only while each grant of
    /// `fence` (exclusive grants of `session`, named `names`) still stands.
    pub fn fenced(
        session: Arc<dyn LockSession>,
        fence: Vec<GrantId>,
        names: &[String],
        buckets: KvBuckets,
    ) -> KeyValueCtx {
        KeyValueCtx {
            sessions: Sessions::Given(session),
            fence,
            fence_names: names.join(", "),
            buckets,
        }
    }

    pub(crate) fn buckets(&self) -> &KvBuckets {
        &self.buckets
    }

    fn session(&self) -> &Arc<dyn LockSession> {
        match &self.sessions {
            Sessions::Given(session) => session,
            Sessions::OnFirstUse {
                backend,
                owner,
                opened,
            } => opened.get_or_init(|| Arc::from(backend.open_session(owner))),
        }
    }

    /// The engine's store, for reads (writes go through [`Self::write`]).
    pub(crate) fn store(&self) -> Result<&dyn KeyValue, BackendError> {
        self.session().key_value()
    }

    /// Writes `writes` to `bucket` with this context's fence: whole or not
    /// at all, each with the version it expects.
    ///
    /// A fenced write runs to the engine's answer in a task of its own that
    /// keeps the fence's session, and so its grants, alive: an instance that
    /// ends (or a caller that stops waiting) while its write is out does not
    /// release its declared locks until the engine has answered, so under
    /// host-local hand-off the next instance of this host is granted only
    /// after that write, and its own writes land after it.
    ///
    /// # Errors
    /// What [`KeyValue::kv_write`] refuses; `Unsupported` on an engine
    /// without a key-value store.
    ///
    /// # Cancellation safety
    /// A dropped call may still commit, whole, and only while the fence
    /// stood; the fence's grants are held until it has been answered.
    pub async fn write(
        &self,
        bucket: &Bucket,
        writes: &[KvWrite],
    ) -> Result<KvCommit, BackendError> {
        if self.fence.is_empty() {
            return self.store()?.kv_write(bucket, writes, &[]).await;
        }
        let session = self.session().clone();
        // Refused here, before a task is spawned for it.
        session.key_value()?;
        let (bucket, writes, fence) = (bucket.clone(), writes.to_vec(), self.fence.clone());
        let out = tokio::spawn(async move {
            let answer = session
                .key_value()?
                .kv_write(&bucket, &writes, &fence)
                .await;
            // The session (with the fence's grants) goes only now.
            drop(session);
            answer
        });
        out.await.unwrap_or_else(|ended| {
            Err(BackendError::Unavailable(format!(
                "the key-value write's task ended without an answer: {ended}"
            )))
        })
    }

    /// What a write the fence refused says.
    pub(crate) fn lost_message(&self) -> String {
        format!(
            "the declared lock {} no longer stands (lost): nothing was written",
            self.fence_names
        )
    }
}
