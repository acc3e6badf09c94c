//! The host's etcd lease: its one session with etcd. Every key the host puts
//! lives under it; when it expires etcd deletes them all.
//!
//! The lease is kept alive over etcd's keep-alive stream, and judged by the
//! host's own clock ([`Liveness`]), not by the stream: the *send* time of every
//! answered keep-alive is "last heard" (etcd renewed the lease no earlier than
//! that), and the lease counts as gone once its TTL less a margin has passed
//! since then. A stalled stream (a partition that keeps the socket open) is
//! therefore noticed by the clock: holders are told `suspended` after a fifth
//! of that time and `lost` before etcd can expire the lease and grant the lock
//! to another host. A leader change, which resets TTLs, is invisible.
//!
//! A lease that ended is replaced in the background (see [`Leases::establish`]),
//! with the back-off of `backoff`; while etcd cannot be reached, requests fail
//! at once (`Unavailable`) rather than wait out their timeouts.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use etcd_client::{Client, GetOptions, LeaseKeepAliveStream, LeaseKeeper};
use tokio::time::Instant;

use super::EtcdConfig;
use super::connect::{connect_error, connect_options, explain};
use super::errors::classify;
use wardlock_backend::BackendError;
use wardlock_backend::backoff::{Reestablish, start_reconnect};
use wardlock_backend::handoff::{NodeSession, WatchFuture};
use wardlock_backend::liveness::{Liveness, SessionHealth};

/// One lease of this host.
pub(crate) struct Lease {
    /// etcd's lease ID.
    pub id: i64,
    /// Counts the host's leases: a grant made under one is lost with it.
    pub generation: u64,
    pub liveness: Liveness,
    /// Whether the keep-alive stream is open now.
    connected: AtomicBool,
}

impl Lease {
    /// What may be claimed about the lease now (ends it locally once etcd may
    /// have expired it).
    pub(crate) fn health(&self) -> SessionHealth {
        self.liveness
            .health(self.connected.load(Ordering::Acquire), Instant::now())
    }
}

impl NodeSession for Lease {
    fn health(&self) -> SessionHealth {
        Lease::health(self)
    }

    fn until_over(self: Arc<Self>) -> WatchFuture {
        Box::pin(async move { self.liveness.until_ended().await })
    }
}

/// The host's current lease, and how to make the next one.
pub(crate) struct Leases {
    config: EtcdConfig,
    client: tokio::sync::OnceCell<Client>,
    current: Mutex<Option<Arc<Lease>>>,
    /// Only one lease grant at a time.
    granting: tokio::sync::Mutex<()>,
    generations: AtomicU64,
    /// Why etcd could not be reached, while the background loop retries.
    unreachable: Mutex<Option<String>>,
    reconnecting: AtomicBool,
    closed: AtomicBool,
    runtime: tokio::runtime::Handle,
    /// Leases this host gave up (judged gone by its clock) that etcd may
    /// still keep, with their keys: an etcd restarted from its data restores
    /// its leases with a fresh TTL, so the keys of the host's held, queued
    /// and cached locks would hold its next requests behind its own past
    /// until then. Revoked before the next lease is handed out.
    given_up: Mutex<Vec<i64>>,
}

impl Leases {
    pub(crate) fn new(config: EtcdConfig, runtime: tokio::runtime::Handle) -> Self {
        Leases {
            config,
            client: tokio::sync::OnceCell::new(),
            current: Mutex::new(None),
            granting: tokio::sync::Mutex::new(()),
            generations: AtomicU64::new(0),
            unreachable: Mutex::new(None),
            reconnecting: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            runtime,
            given_up: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// The client (channels connect lazily and reconnect by themselves).
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the endpoints cannot be used.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub(crate) async fn client(&self) -> Result<Client, BackendError> {
        let client = self
            .client
            .get_or_try_init(|| async {
                let options = connect_options(&self.config)?;
                tokio::time::timeout(
                    self.config.connect_timeout,
                    Client::connect(self.config.urls(), Some(options)),
                )
                .await
                .map_err(|_| self.no_answer())?
                .map_err(|e| connect_error(&self.config, &e))
            })
            .await?;
        Ok(client.clone())
    }

    fn current(&self) -> Option<Arc<Lease>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The lease of `generation` while it is the current one.
    pub(crate) fn lease_of(&self, generation: u64) -> Option<Arc<Lease>> {
        self.current().filter(|l| l.generation == generation)
    }

    /// The current lease, if one lives (for status and health).
    pub(crate) fn latest(&self) -> Option<Arc<Lease>> {
        self.current().filter(|l| !l.liveness.is_ended())
    }

    fn unreachable_reason(&self) -> Option<String> {
        self.unreachable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_unreachable(&self, why: Option<String>) {
        *self.unreachable.lock().unwrap_or_else(|e| e.into_inner()) = why;
    }

    /// Whether the last attempt to reach etcd failed.
    pub(crate) fn is_unreachable(&self) -> bool {
        self.unreachable_reason().is_some()
    }

    /// The lease to put keys under: the current one, or a new one. Fails at
    /// once while etcd is unreachable (the background loop reconnects).
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] naming why etcd cannot be reached.
    ///
    /// # Cancellation safety
    /// Cancel safe: a lease granted for a dropped call stays the current one.
    pub(crate) async fn lease(self: &Arc<Self>) -> Result<Arc<Lease>, BackendError> {
        if let Some(lease) = self.latest() {
            return Ok(lease);
        }
        if let Some(why) = self.unreachable_reason() {
            self.start_reconnect();
            return Err(BackendError::Unavailable(why));
        }
        self.establish().await
    }

    /// Grants a new lease unless one lives, and starts keeping it alive; on
    /// failure, marks etcd unreachable and starts the background loop.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when etcd did not grant a lease within
    /// the connect timeout; [`BackendError::Refused`] when it refused this
    /// host (authentication).
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub(crate) async fn establish(self: &Arc<Self>) -> Result<Arc<Lease>, BackendError> {
        let _one = self.granting.lock().await;
        if let Some(lease) = self.latest() {
            return Ok(lease);
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(BackendError::Unavailable(
                "the etcd backend was shut down".into(),
            ));
        }
        // Every failure is explained (a TLS port, a certificate problem),
        // whichever step it came from: the client's connect, the access
        // check or the grant itself.
        let granted = match self.grant().await {
            Ok(lease) => Ok(lease),
            Err(error) => Err(explain(&self.config, error).await),
        };
        match granted {
            Ok(lease) => {
                self.set_unreachable(None);
                let replaced = self
                    .current
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                if let Some(replaced) = replaced {
                    self.given_up
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(replaced.id);
                }
                // etcd answers again: what a lease given up left goes before
                // this host says it is connected.
                self.revoke_given_up().await;
                *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(lease.clone());
                self.runtime
                    .spawn(keep_alive(Arc::downgrade(self), lease.clone()));
                Ok(lease)
            }
            Err(error) => {
                if let BackendError::Unavailable(why) = &error {
                    self.set_unreachable(Some(why.clone()));
                    self.start_reconnect();
                }
                Err(error)
            }
        }
    }

    async fn grant(&self) -> Result<Arc<Lease>, BackendError> {
        let mut client = self.client().await?;
        self.check_access(&mut client).await?;
        let sent = Instant::now();
        let ttl = self.config.ttl_seconds();
        let granted =
            tokio::time::timeout(self.config.connect_timeout, client.lease_grant(ttl, None))
                .await
                .map_err(|_| self.no_answer())?
                .map_err(|e| classify(&e, "grant a lease"))?;
        let ttl = Duration::from_secs(u64::try_from(granted.ttl()).unwrap_or(0).max(1));
        // Judged gone a tenth early (at least 500 ms): before etcd can
        // expire it and grant its locks elsewhere.
        let margin = (ttl / 10).max(Duration::from_millis(500));
        let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!(
            lease = format!("{:x}", granted.id()),
            ?ttl,
            generation,
            "etcd lease granted"
        );
        Ok(Arc::new(Lease {
            id: granted.id(),
            generation,
            liveness: Liveness::new(ttl.saturating_sub(margin), sent),
            connected: AtomicBool::new(true),
        }))
    }

    /// Reads one key under the root, so a cluster that refuses this host
    /// (no user given where `auth enable` is on, a role without the root's
    /// prefix) is told now, naming the flag, and not at the first lock.
    /// etcd grants leases to anyone.
    async fn check_access(&self, client: &mut Client) -> Result<(), BackendError> {
        let root = format!("{}/", self.config.root);
        let options = GetOptions::new()
            .with_prefix()
            .with_keys_only()
            .with_limit(1);
        tokio::time::timeout(
            self.config.connect_timeout,
            client.get(root.as_str(), Some(options)),
        )
        .await
        .map_err(|_| self.no_answer())?
        .map_err(|e| classify(&e, &format!("read the keys under {root}")))?;
        Ok(())
    }

    /// What a request that got no answer within the connect timeout means.
    fn no_answer(&self) -> BackendError {
        BackendError::Unavailable(format!(
            "etcd at {} did not answer within {:?}",
            self.config.endpoints.join(","),
            self.config.connect_timeout
        ))
    }

    /// Starts the background loop that makes a new lease, unless one runs.
    pub(crate) fn start_reconnect(self: &Arc<Self>) {
        start_reconnect(self, &self.runtime);
    }

    /// Ends the backend: no new lease; the current one is revoked, so etcd
    /// deletes the host's keys at once (bounded by the connect timeout).
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped call leaves the lease to expire by its TTL.
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let Some(lease) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        lease.liveness.end();
        if let Ok(mut client) = self.client().await {
            let revoked =
                tokio::time::timeout(self.config.connect_timeout, client.lease_revoke(lease.id))
                    .await;
            if !matches!(revoked, Ok(Ok(_))) {
                tracing::warn!(
                    lease = format!("{:x}", lease.id),
                    "could not revoke the etcd lease; its keys go with its TTL"
                );
            }
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Revokes every lease given up (each bounded by the connect timeout):
    /// etcd deletes its keys with it; one etcd no longer knows has none.
    ///
    /// # Cancellation safety
    /// Cancel safe: a lease not revoked yet expires on etcd later.
    async fn revoke_given_up(&self) {
        let given_up =
            std::mem::take(&mut *self.given_up.lock().unwrap_or_else(|e| e.into_inner()));
        if given_up.is_empty() {
            return;
        }
        let Ok(mut client) = self.client().await else {
            return;
        };
        for id in given_up {
            let revoked =
                tokio::time::timeout(self.config.connect_timeout, client.lease_revoke(id)).await;
            match revoked {
                Ok(Ok(_)) => tracing::info!(
                    lease = format!("{id:x}"),
                    "revoked a lease this host had given up, which etcd still kept (with its keys)"
                ),
                Ok(Err(error)) => {
                    tracing::debug!(lease = format!("{id:x}"), %error, "a lease given up is gone from etcd")
                }
                Err(_) => tracing::warn!(
                    lease = format!("{id:x}"),
                    "revoking a lease given up got no answer; its keys go with its TTL"
                ),
            }
        }
    }

    /// Forgets lease `generation` once it ended, and starts making the next.
    fn ended(self: &Arc<Self>, generation: u64) {
        {
            let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
            if current.as_ref().is_some_and(|l| l.generation == generation)
                && let Some(lease) = current.take()
            {
                self.given_up
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(lease.id);
            }
        }
        tracing::warn!(
            generation,
            "etcd lease lost; granting a new one in the background"
        );
        self.start_reconnect();
    }
}

impl Reestablish for Leases {
    const SERVICE: &'static str = "etcd";

    fn is_closed(&self) -> bool {
        Leases::is_closed(self)
    }

    fn reconnecting(&self) -> &AtomicBool {
        &self.reconnecting
    }

    async fn attempt(self: Arc<Self>) -> Result<(), BackendError> {
        self.establish().await.map(|_| ())
    }
}

/// Keeps `lease` alive until it ends (by the clock, by etcd, or at close).
async fn keep_alive(leases: Weak<Leases>, lease: Arc<Lease>) {
    let mut beat = tokio::time::interval(lease.liveness.heartbeat_interval());
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut keeper: Option<LeaseKeeper> = None;
    let mut answers: Option<LeaseKeepAliveStream> = None;
    let mut sent: VecDeque<Instant> = VecDeque::new();
    loop {
        tokio::select! {
            _ = beat.tick() => {
                if lease.health() == SessionHealth::Ended {
                    break;
                }
                let Some(owner) = leases.upgrade() else { break };
                if keeper.is_none() {
                    let opened = match owner.client().await {
                        Ok(mut client) => tokio::time::timeout(
                            owner.config.connect_timeout,
                            client.lease_keep_alive(lease.id),
                        )
                        .await
                        .ok()
                        .and_then(Result::ok),
                        Err(_) => None,
                    };
                    match opened {
                        Some((k, a)) => {
                            keeper = Some(k);
                            answers = Some(a);
                            sent.clear();
                            lease.connected.store(true, Ordering::Release);
                        }
                        None => {
                            lease.connected.store(false, Ordering::Release);
                            continue;
                        }
                    }
                }
                let at = Instant::now();
                if let Some(k) = keeper.as_mut() {
                    if k.keep_alive().await.is_ok() {
                        sent.push_back(at);
                    } else {
                        keeper = None;
                        answers = None;
                        lease.connected.store(false, Ordering::Release);
                    }
                }
            }
            answer = next_answer(&mut answers) => match answer {
                Some(ttl) if ttl > 0 => {
                    if let Some(at) = sent.pop_front() {
                        lease.liveness.heard(at);
                    }
                }
                Some(_expired) => {
                    // etcd says the lease is gone.
                    lease.liveness.end();
                    break;
                }
                None => {
                    keeper = None;
                    answers = None;
                    lease.connected.store(false, Ordering::Release);
                }
            },
            () = lease.liveness.until_ended() => break,
            // The clock's end, which a tick may pass: subscribers learn
            // `lost` at it (see `Liveness::deadline`).
            () = tokio::time::sleep_until(lease.liveness.deadline()) => {
                if lease.health() == SessionHealth::Ended {
                    break;
                }
            }
        }
    }
    lease.liveness.end();
    if let Some(owner) = leases.upgrade()
        && !owner.is_closed()
    {
        owner.ended(lease.generation);
    }
}

/// The TTL of the next keep-alive answer; `None` when the stream broke.
async fn next_answer(answers: &mut Option<LeaseKeepAliveStream>) -> Option<i64> {
    match answers {
        Some(stream) => match stream.message().await {
            Ok(Some(answer)) => Some(answer.ttl()),
            _ => None,
        },
        None => std::future::pending().await,
    }
}
