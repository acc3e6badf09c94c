//! Serves HTTP requests with `wasi:http/proxy` components: one instance — and
//! one lock session — per request.
//!
//! A request's locks live exactly as long as its instance. The instance ends
//! when the guest returns from `handle`, traps, runs past the request timeout,
//! holds a lock past the hold lease, or when the client goes away before the
//! response is complete: the response body owns the instance's task, and
//! dropping that body early (hyper does when the connection closes) aborts it.
//! Every end drops the Store, and with it every lock the request held or
//! waited for.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::{Body, Bytes, Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;
use wasmtime::component::Component;
use wasmtime_wasi::WasiCtx;
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

use super::command::classify;
use super::config::RunnerConfig;
use super::declared::first_lost;
use super::error::{RunnerError, first_line};
use super::instance::{lease_expired, new_store, pre_instantiate};
use super::outcome::Outcome;
use super::request_hold;
use super::runtime::Runtime;
use super::state::InstanceState;

/// How one request's instance ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestOutcome {
    /// The guest returned from `handle`.
    Completed,
    /// The guest trapped or could not be instantiated; the text says why.
    Failed(String),
    /// The instance ran past the request timeout and was stopped.
    TimedOut(Duration),
    /// The instance held a lock past the hold lease; the lock was taken back.
    LeaseExpired(Duration),
    /// The client went away before the response was complete; the instance was
    /// stopped.
    ClientGone,
    /// A lock declared for the request (a plugin's `hold`) was lost; the
    /// instance was stopped. The text is the lock's name.
    LockLost(String),
}

impl RequestOutcome {
    /// A short label for logs and metrics (`completed`, `failed`, `timeout`,
    /// `lease_expired`, `client_gone`, `lock_lost`).
    pub fn label(&self) -> &'static str {
        match self {
            RequestOutcome::Completed => "completed",
            RequestOutcome::Failed(_) => "failed",
            RequestOutcome::TimedOut(_) => "timeout",
            RequestOutcome::LeaseExpired(_) => "lease_expired",
            RequestOutcome::ClientGone => "client_gone",
            RequestOutcome::LockLost(_) => "lock_lost",
        }
    }
}

/// Called once when a request's instance has ended, however it ended.
pub type OnEnd = Box<dyn FnOnce(RequestOutcome) + Send>;

/// The body of a response from a guest. Dropping it before its end stops the
/// request's instance (the client is gone); reaching its end lets the instance
/// run on to its return (bounded by the request timeout).
pub struct ResponseBody {
    inner: HyperOutgoingBody,
    instance: Option<AbortOnDrop>,
}

impl ResponseBody {
    /// A complete body with `text`, for responses the host makes itself.
    pub fn text(text: impl Into<String>) -> Self {
        let body = http_body_util::Full::new(Bytes::from(text.into()))
            .map_err(|never| match never {})
            .boxed_unsync();
        ResponseBody {
            inner: body,
            instance: None,
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some(instance) = self.instance.take()
        {
            instance.disarm();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Aborts a task when dropped, unless disarmed.
struct AbortOnDrop(Option<AbortHandle>);

impl AbortOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// Reports a request's end exactly once; if the task is aborted first, its
/// drop reports [`RequestOutcome::ClientGone`].
struct EndReport(Option<OnEnd>);

impl EndReport {
    fn report(mut self, outcome: RequestOutcome) {
        if let Some(on_end) = self.0.take() {
            on_end(outcome);
        }
    }
}

impl Drop for EndReport {
    fn drop(&mut self) {
        if let Some(on_end) = self.0.take() {
            on_end(RequestOutcome::ClientGone);
        }
    }
}

/// Serves requests with instances of one `wasi:http/proxy` component.
pub struct ProxyRunner {
    runtime: Runtime,
    pre: ProxyPre<InstanceState>,
    config: RunnerConfig,
    plugin: String,
    requests: AtomicU64,
    /// Request slots shared with the other runners of the server, if bounded.
    admission: Option<Arc<Semaphore>>,
}

impl ProxyRunner {
    /// Links `component` against WASI, `wasi:http` and the lock capability.
    /// `plugin` names it in lock owner descriptions (`<plugin>#<request>`).
    /// The configuration's `timeout` is the per-request timeout.
    ///
    /// # Errors
    /// [`RunnerError::World`] when the component needs imports the host does not
    /// provide or does not export `wasi:http/incoming-handler`.
    pub fn new(
        runtime: &Runtime,
        component: &Component,
        plugin: &str,
        config: RunnerConfig,
    ) -> Result<Self, RunnerError> {
        let world =
            "wardlock HTTP guest world (a wasi:http/proxy component importing wardlock:lock/locks)";
        let pre = pre_instantiate(runtime, component, plugin, world, ProxyPre::new)?;
        Ok(ProxyRunner {
            runtime: runtime.clone(),
            pre,
            config,
            plugin: plugin.to_owned(),
            requests: AtomicU64::new(0),
            admission: None,
        })
    }

    /// Serves at most as many requests at once as `slots` has permits (one
    /// semaphore for every runner of an instance pool sized for them): a
    /// request beyond them waits for a slot, within its request timeout, and
    /// gets 503 if none frees up in time, instead of failing to instantiate.
    #[must_use]
    pub fn with_admission(mut self, slots: Arc<Semaphore>) -> Self {
        self.admission = Some(slots);
        self
    }

    /// A request slot, waited for within `timeout`; `Ok(None)` when unbounded.
    async fn admit(&self, timeout: Option<Duration>) -> Result<Option<OwnedSemaphorePermit>, ()> {
        let Some(slots) = &self.admission else {
            return Ok(None);
        };
        let waited = match timeout {
            Some(limit) => tokio::time::timeout(limit, slots.clone().acquire_owned())
                .await
                .map_err(|_| ())?,
            None => slots.clone().acquire_owned().await,
        };
        waited.map(Some).map_err(|_| ())
    }

    /// The configuration instances get.
    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    /// Handles one request in a new instance and returns its response: the
    /// guest's, or one the host makes (500 when the guest failed before
    /// responding, 504 past the request timeout, 503 when the hold lease took a
    /// lock back or no request slot freed up within the request timeout).
    /// `on_end` learns how the instance ended, once it has. The request timeout
    /// counts from the call, the wait for a slot included.
    ///
    /// # Cancellation safety
    /// Cancel safe: dropping the future (or the returned body before its end)
    /// stops the instance and releases every lock it held or waited for.
    pub async fn handle<B>(
        &self,
        mut request: hyper::Request<B>,
        on_end: OnEnd,
    ) -> hyper::Response<ResponseBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<wasmtime_wasi_http::Error>,
    {
        let report = EndReport(Some(on_end));
        let arrived = std::time::Instant::now();
        let Ok(slot) = self.admit(self.config.timeout).await else {
            let limit = self.config.timeout.unwrap_or_default();
            report.report(RequestOutcome::TimedOut(limit));
            return respond(
                503,
                format!(
                    "the server is at capacity: no request slot freed up within {:.1}s\n",
                    limit.as_secs_f64()
                ),
            );
        };
        let number = self.requests.fetch_add(1, Ordering::Relaxed);
        let owner = format!("{}#{number}", self.plugin);
        // Taken before the guest sees the request; released after its store.
        let left = |limit: Duration| limit.saturating_sub(arrived.elapsed());
        let hold_wait = self.config.timeout.map(left);
        let plugin = (self.plugin.as_str(), number);
        let declared =
            match request_hold::take(&self.config, &owner, &mut request, plugin, hold_wait).await {
                Ok(declared) => declared,
                Err((outcome, response)) => {
                    report.report(outcome);
                    return response;
                }
            };
        let mut wasi = WasiCtx::builder();
        wasi.allow_blocking_current_thread(self.config.file_io.blocks_the_thread());
        wasi.arg(&self.plugin).inherit_stdout().inherit_stderr();
        let (mut store, lease) =
            match new_store(&self.runtime, &self.config, &owner, wasi, declared.as_ref()) {
                Ok(created) => created,
                Err(why) => {
                    report.report(RequestOutcome::Failed(why.clone()));
                    return respond(500, format!("cannot start the plugin: {why}\n"));
                }
            };
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let handles = (|| -> wasmtime::Result<_> {
            let request = store
                .data_mut()
                .http()
                .new_incoming_request(Scheme::Http, request)?;
            let out = store.data_mut().http().new_response_outparam(sender)?;
            Ok((request, out))
        })();
        let (request, out) = match handles {
            Ok(handles) => handles,
            Err(error) => {
                let why = first_line(&format!("{error:#}"));
                report.report(RequestOutcome::Failed(why.clone()));
                return respond(400, format!("bad request: {why}\n"));
            }
        };
        let pre = self.pre.clone();
        let timeout = self.config.timeout.map(left);
        let task = tokio::spawn(async move {
            let outcome = {
                let guest = async {
                    let proxy = pre.instantiate_async(&mut store).await?;
                    proxy
                        .wasi_http_incoming_handler()
                        .call_handle(&mut store, request, out)
                        .await
                };
                let bounded = async {
                    match timeout {
                        Some(limit) => match tokio::time::timeout(limit, guest).await {
                            Ok(result) => result.map_err(Some),
                            Err(_) => Err(None),
                        },
                        None => guest.await.map_err(Some),
                    }
                };
                tokio::select! {
                    result = bounded => match result {
                        Ok(()) => RequestOutcome::Completed,
                        Err(Some(error)) => match classify(&error) {
                            Outcome::Success => RequestOutcome::Completed,
                            other => RequestOutcome::Failed(other.to_string()),
                        },
                        Err(None) => RequestOutcome::TimedOut(timeout.unwrap_or_default()),
                    },
                    () = lease_expired(lease.as_ref()) => RequestOutcome::LeaseExpired(
                        lease.as_ref().map(|l| l.max_hold()).unwrap_or_default()
                    ),
                    name = first_lost(declared.as_ref()) => {
                        tracing::warn!(lock = %name, request = %owner, "declared lock lost: request stopped");
                        RequestOutcome::LockLost(name.to_string())
                    }
                }
            };
            // The instance is over: its Store — and lock session — go now,
            // then its declared locks, then its slot.
            drop(store);
            drop(declared);
            drop(slot);
            outcome
        });
        let instance = AbortOnDrop(Some(task.abort_handle()));
        let response = match receiver.await {
            Ok(Ok(response)) => response.map(|inner| ResponseBody {
                inner,
                instance: Some(instance),
            }),
            Ok(Err(code)) => {
                // The guest answered with an error instead of a response; it
                // runs on to its return in the background.
                instance.disarm();
                respond(
                    500,
                    format!("the plugin failed the request: {}\n", describe(&code)),
                )
            }
            Err(_) => {
                // The outparam was dropped unset: the instance has ended.
                instance.disarm();
                let outcome = match task.await {
                    Ok(outcome) => outcome,
                    Err(join) => RequestOutcome::Failed(join.to_string()),
                };
                let response = error_response(&outcome);
                report.report(outcome);
                return response;
            }
        };
        tokio::spawn(async move {
            match task.await {
                Ok(outcome) => report.report(outcome),
                Err(_) => report.report(RequestOutcome::ClientGone),
            }
        });
        response
    }
}

fn error_response(outcome: &RequestOutcome) -> hyper::Response<ResponseBody> {
    match outcome {
        RequestOutcome::TimedOut(limit) => respond(
            504,
            format!(
                "the plugin did not answer within the {:.3}s request timeout; its locks were released\n",
                limit.as_secs_f64()
            ),
        ),
        RequestOutcome::LeaseExpired(limit) => respond(
            503,
            format!(
                "the plugin held a lock longer than the {:.3}s hold lease; the lock was taken back\n",
                limit.as_secs_f64()
            ),
        ),
        RequestOutcome::Failed(why) => respond(500, format!("the plugin failed: {why}\n")),
        RequestOutcome::Completed => respond(500, "the plugin returned without a response\n"),
        RequestOutcome::ClientGone => respond(500, "the request was cancelled\n"),
        RequestOutcome::LockLost(name) => respond(
            503,
            format!("the request's declared lock {name} was lost; the plugin was stopped\n"),
        ),
    }
}

fn describe(code: &ErrorCode) -> String {
    format!("{code:?}")
}

/// A plain-text response the host makes.
pub fn respond(status: u16, text: impl Into<String>) -> hyper::Response<ResponseBody> {
    let mut response = hyper::Response::new(ResponseBody::text(text));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
