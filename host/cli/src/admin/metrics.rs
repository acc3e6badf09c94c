//! Prometheus metrics of `wardlock serve`, and the backend wrapper that feeds them.
//!
//! Lock metrics are labelled by plugin and mode, so a platform sees which plugin
//! waits, holds or times out; request metrics by plugin and how the request's
//! instance ended.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use wardlock_host::backend::observe::{
    Admission, BackendObserver, ObservedBackend, SessionObserver,
};
use wardlock_host::backend::{
    BackendError, Grant, GrantId, GrantStatus, LockBackend, Mode, Request, RequestKind,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LockLabels {
    plugin: String,
    mode: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    plugin: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabels {
    backend: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ElectionLabels {
    name: String,
}

fn seconds_histogram() -> Histogram {
    // 100 µs to ~55 min.
    Histogram::new(exponential_buckets(0.0001, 3.0, 16).map(as_written))
}

/// `bound` rounded to 12 significant digits, so the exposition prints the
/// bound as written (`le="0.0003"`), not as the product of its float
/// arithmetic (`le="0.00030000000000000003"`).
fn as_written(bound: f64) -> f64 {
    format!("{bound:.11e}").parse().unwrap_or(bound)
}

/// Every metric `wardlock serve` exports.
pub(crate) struct Metrics {
    registry: Registry,
    grants: Family<LockLabels, Counter>,
    acquire_wait: Family<LockLabels, Histogram, fn() -> Histogram>,
    hold: Family<LockLabels, Histogram, fn() -> Histogram>,
    waiters: Family<LockLabels, Gauge>,
    timeouts: Family<LockLabels, Counter>,
    lost: Family<LockLabels, Counter>,
    leases_expired: Family<PluginLabels, Counter>,
    requests: Family<RequestLabels, Counter>,
    session_state: Family<BackendLabels, Gauge>,
    leader: Family<ElectionLabels, Gauge>,
    leadership_changes: Family<ElectionLabels, Counter>,
    deadlock_cycles: Counter,
}

impl Metrics {
    /// A registry with every metric registered (and none observed yet).
    pub(crate) fn new() -> Arc<Self> {
        let mut registry = Registry::default();
        let grants = Family::<LockLabels, Counter>::default();
        let acquire_wait = Family::<LockLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            seconds_histogram as fn() -> Histogram,
        );
        let hold = Family::<LockLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            seconds_histogram as fn() -> Histogram,
        );
        let waiters = Family::<LockLabels, Gauge>::default();
        let timeouts = Family::<LockLabels, Counter>::default();
        let lost = Family::<LockLabels, Counter>::default();
        let leases_expired = Family::<PluginLabels, Counter>::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let session_state = Family::<BackendLabels, Gauge>::default();
        let leader = Family::<ElectionLabels, Gauge>::default();
        let leadership_changes = Family::<ElectionLabels, Counter>::default();
        let deadlock_cycles = Counter::default();
        registry.register("wardlock_grants", "Locks granted", grants.clone());
        registry.register(
            "wardlock_deadlock_cycles",
            "Wait-for cycles this host found: among its own guests (broken, the youngest waiter got would-deadlock) or across hosts (reported)",
            deadlock_cycles.clone(),
        );
        registry.register(
            "wardlock_leader",
            "Whether this host leads the singleton election NAME now (1) or stands by (0)",
            leader.clone(),
        );
        registry.register(
            "wardlock_leadership_changes",
            "Times this host began or stopped leading the singleton election NAME",
            leadership_changes.clone(),
        );
        registry.register(
            "wardlock_acquire_wait_seconds",
            "Time from asking for a lock to being granted it",
            acquire_wait.clone(),
        );
        registry.register(
            "wardlock_hold_seconds",
            "Time a lock was held, from grant to release or the end of its request",
            hold.clone(),
        );
        registry.register(
            "wardlock_waiters",
            "Acquisitions waiting now",
            waiters.clone(),
        );
        registry.register(
            "wardlock_timeouts",
            "Acquisitions that timed out",
            timeouts.clone(),
        );
        registry.register(
            "wardlock_lost",
            "Grants found lost (the backend session expired)",
            lost.clone(),
        );
        registry.register(
            "wardlock_leases_expired",
            "Requests stopped because they held a lock longer than --max-hold",
            leases_expired.clone(),
        );
        registry.register(
            "wardlock_requests",
            "Requests served, by how their instance ended",
            requests.clone(),
        );
        registry.register(
            "wardlock_backend_session_state",
            "The backend's session with its lock service (ZooKeeper session, etcd lease): 1 connected, 0 connecting or disconnected, -1 down (ended, unreachable); in-process backends 1",
            session_state.clone(),
        );
        Arc::new(Metrics {
            registry,
            grants,
            acquire_wait,
            hold,
            waiters,
            timeouts,
            lost,
            leases_expired,
            requests,
            session_state,
            leader,
            leadership_changes,
            deadlock_cycles,
        })
    }

    /// Brings the cycle counter up to `found`, the host table's count so far
    /// (read at scrape time: the table counts, the metric follows).
    pub(crate) fn set_cycles_found(&self, found: u64) {
        let seen = self.deadlock_cycles.get();
        if found > seen {
            self.deadlock_cycles.inc_by(found - seen);
        }
    }

    /// The metrics in the OpenMetrics text format.
    pub(crate) fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::warn!(%error, "cannot encode metrics");
        }
        text
    }

    /// Counts a finished request.
    pub(crate) fn request_ended(&self, plugin: &str, outcome: &str) {
        self.requests
            .get_or_create(&RequestLabels {
                plugin: plugin.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
        if outcome == "lease_expired" {
            self.leases_expired
                .get_or_create(&PluginLabels {
                    plugin: plugin.to_owned(),
                })
                .inc();
        }
    }

    /// Records that this host now leads (or no longer leads) election `name`.
    pub(crate) fn set_leading(&self, name: &str, leading: bool) {
        let labels = ElectionLabels {
            name: name.to_owned(),
        };
        self.leader.get_or_create(&labels).set(i64::from(leading));
        self.leadership_changes.get_or_create(&labels).inc();
    }

    /// Marks election `name` as one this host stands for (not leading yet).
    pub(crate) fn stand_by(&self, name: &str) {
        let labels = ElectionLabels {
            name: name.to_owned(),
        };
        self.leader.get_or_create(&labels).set(0);
    }

    /// Records a backend's ZooKeeper session state (see the metric's help).
    pub(crate) fn set_session_state(&self, backend: &str, value: i64) {
        self.session_state
            .get_or_create(&BackendLabels {
                backend: backend.to_owned(),
            })
            .set(value);
    }
}

/// Makes the observers that count a plugin's sessions into [`Metrics`]:
/// `ObservedBackend::new(backend, Metered::new(plugin, metrics))`.
pub(crate) struct Metered {
    plugin: String,
    metrics: Arc<Metrics>,
}

impl Metered {
    /// Counts under `plugin`'s label.
    pub(crate) fn new(plugin: &str, metrics: Arc<Metrics>) -> Self {
        Metered {
            plugin: plugin.to_owned(),
            metrics,
        }
    }

    /// `inner`, its sessions counted under `plugin`'s label.
    pub(crate) fn backend(
        inner: Arc<dyn LockBackend>,
        plugin: &str,
        metrics: Arc<Metrics>,
    ) -> ObservedBackend<Metered> {
        ObservedBackend::new(inner, Metered::new(plugin, metrics))
    }
}

impl BackendObserver for Metered {
    type Session = MeteredSession;

    fn session(&self, _owner: &str) -> MeteredSession {
        MeteredSession {
            plugin: self.plugin.clone(),
            metrics: self.metrics.clone(),
            held: Mutex::new(HashMap::new()),
        }
    }
}

struct HeldGrant {
    labels: LockLabels,
    since: Instant,
    lost_counted: bool,
}

/// Counts one session's requests, grants, holds and losses.
pub(crate) struct MeteredSession {
    plugin: String,
    metrics: Arc<Metrics>,
    held: Mutex<HashMap<GrantId, HeldGrant>>,
}

/// Decrements the waiters gauge when the wait ends, however it ends.
struct Waiting(Gauge);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl MeteredSession {
    fn labels(&self, kind: RequestKind) -> LockLabels {
        LockLabels {
            plugin: self.plugin.clone(),
            mode: kind.as_str().to_owned(),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<GrantId, HeldGrant>> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn record_grant(&self, grant: &Grant, labels: LockLabels, waited: Duration) {
        self.metrics.grants.get_or_create(&labels).inc();
        self.metrics
            .acquire_wait
            .get_or_create(&labels)
            .observe(waited.as_secs_f64());
        self.held().insert(
            grant.id,
            HeldGrant {
                labels,
                since: Instant::now(),
                lost_counted: false,
            },
        );
    }

    fn ended(&self, held: HeldGrant) {
        self.metrics
            .hold
            .get_or_create(&held.labels)
            .observe(held.since.elapsed().as_secs_f64());
    }
}

impl SessionObserver for MeteredSession {
    fn admit(&self, request: Request<'_>, _waits: bool) -> Result<Admission, BackendError> {
        let gauge = self
            .metrics
            .waiters
            .get_or_create(&self.labels(request.kind))
            .clone();
        gauge.inc();
        Ok(Admission::guard(Waiting(gauge)))
    }

    fn granted(&self, request: Request<'_>, grant: &Grant, waited: Option<Duration>) {
        self.record_grant(grant, self.labels(request.kind), waited.unwrap_or_default());
    }

    fn failed(&self, request: Request<'_>, error: &BackendError) {
        let labels = self.labels(request.kind);
        match error {
            BackendError::Timeout => self.metrics.timeouts.get_or_create(&labels).inc(),
            BackendError::Lost => self.metrics.lost.get_or_create(&labels).inc(),
            _ => 0,
        };
    }

    fn downgraded(&self, _exclusive: GrantId, shared: &Grant) {
        self.record_grant(
            shared,
            self.labels(RequestKind::Lock(Mode::Shared)),
            Duration::ZERO,
        );
    }

    fn released(&self, grant: GrantId) {
        let held = self.held().remove(&grant);
        if let Some(held) = held {
            self.ended(held);
        }
    }

    fn status(&self, grant: GrantId, status: GrantStatus) -> GrantStatus {
        if status == GrantStatus::Lost
            && let Some(held) = self.held().get_mut(&grant)
            && !held.lost_counted
        {
            held.lost_counted = true;
            self.metrics.lost.get_or_create(&held.labels).inc();
        }
        status
    }
}

impl Drop for MeteredSession {
    fn drop(&mut self) {
        let held: Vec<_> = self.held().drain().map(|(_, held)| held).collect();
        for held in held {
            self.ended(held);
        }
    }
}

#[cfg(test)]
mod tests;
