//! The admin endpoints: `GET /metrics` (Prometheus text), `GET /livez` (the
//! process serves: always 200), `GET /readyz` (every backend can grant locks
//! now: 200, else 503; each backend's line names it, its kind and its state)
//! and `GET /healthz` (the same as `/readyz`). With a token configured, every
//! request must carry `Authorization: Bearer TOKEN` (else 401).

mod locks_api;
mod locks_events;
mod locks_page;
pub(crate) mod metrics;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use wardlock_host::backend::{Health, LockBackend};
use wardlock_host::secret::Secret;
use wasmtime_wasi_http::io::TokioIo;

use self::locks_api::{LocksQuery, LocksSource};
use self::metrics::Metrics;
use wardlock_host::locks::LockTable;

/// The body of every admin response: whole texts, or an event stream.
pub(crate) type AdminBody = UnsyncBoxBody<Bytes, Infallible>;

/// The paths that also take the token as `?token=`.
const LOCKS_PATHS: [&str; 3] = ["/locks", "/api/locks", "/api/locks/events"];

/// What the admin endpoints report on.
#[derive(Clone)]
pub(crate) struct AdminState {
    metrics: Option<Arc<Metrics>>,
    backends: BTreeMap<String, Arc<dyn LockBackend>>,
    token: Option<Secret>,
    locks: Option<LocksSource>,
}

impl AdminState {
    /// Reports `metrics` and the health of `backends`, to requests bearing
    /// `token` if there is one.
    pub(crate) fn new(
        metrics: Arc<Metrics>,
        backends: BTreeMap<String, Arc<dyn LockBackend>>,
        token: Option<Secret>,
    ) -> Self {
        AdminState {
            metrics: Some(metrics),
            backends,
            token,
            locks: None,
        }
    }

    /// `wardlock run`'s admin endpoints: the health of `backends` and the
    /// locks endpoints (once [`AdminState::with_locks`] gives the table),
    /// to requests bearing `token` if there is one; no metrics.
    pub(crate) fn for_run(
        backends: BTreeMap<String, Arc<dyn LockBackend>>,
        token: Option<Secret>,
    ) -> Self {
        AdminState {
            metrics: None,
            backends,
            token,
            locks: None,
        }
    }

    /// Serves the locks endpoints from `table`, asking the backends about
    /// the locks it lists.
    pub(crate) fn with_locks(mut self, table: LockTable) -> Self {
        self.locks = Some(LocksSource::new(table, self.backends.clone()));
        self
    }

    /// Whether `request` bears the token (or none is required): as a bearer
    /// header, or for the locks endpoints as `query`'s `token`.
    fn authorized(
        &self,
        request: &hyper::Request<hyper::body::Incoming>,
        query: &LocksQuery,
    ) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let header = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let given = match (header, &query.token) {
            (Some(given), _) => given,
            (None, Some(given)) if LOCKS_PATHS.contains(&request.uri().path()) => given.as_str(),
            _ => "",
        };
        same_bytes(given.as_bytes(), token.expose().as_bytes())
    }

    /// Updates the session-state gauge of every backend (by its label; an
    /// in-process backend is always connected); returns each backend's label,
    /// kind and health.
    fn refresh(&self) -> Vec<(String, &'static str, Health, Vec<String>)> {
        let mut health = Vec::new();
        for (label, backend) in &self.backends {
            let state = backend.health();
            let value = match state {
                Health::Connected => 1,
                Health::Connecting => 0,
                Health::Down => -1,
            };
            if let Some(metrics) = &self.metrics {
                metrics.set_session_state(label, value);
            }
            health.push((label.clone(), backend.kind(), state, backend.warnings()));
        }
        health
    }

    async fn handle(
        &self,
        request: &hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<AdminBody> {
        let query = LocksQuery::parse(request.uri().query());
        if !self.authorized(request, &query) {
            let mut response = respond(
                401,
                "the admin endpoints need Authorization: Bearer TOKEN (see --admin-token-file); the locks page also takes ?token=TOKEN\n",
            );
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        if request.method() != hyper::Method::GET {
            return respond(405, "use GET\n");
        }
        match (request.uri().path(), &self.metrics, &self.locks) {
            ("/metrics", Some(metrics), locks) => {
                self.refresh();
                if let Some(locks) = locks {
                    metrics.set_cycles_found(locks.cycles_found());
                }
                with_type(
                    respond(200, metrics.encode()),
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )
            }
            ("/livez", _, _) => respond(200, "live\n"),
            ("/readyz" | "/healthz", _, _) => {
                let health = self.refresh();
                let mut text = String::new();
                for (label, kind, state, warnings) in &health {
                    text.push_str(&format!("{label} ({kind}): {state:?}\n"));
                    for warning in warnings {
                        text.push_str(&format!("  warning: {warning}\n"));
                    }
                }
                let healthy = health
                    .iter()
                    .all(|(_, _, state, _)| *state == Health::Connected);
                respond(if healthy { 200 } else { 503 }, text)
            }
            ("/api/locks", _, Some(locks)) => {
                let view = locks.view(query.prefix.as_deref()).await;
                match serde_json::to_string(&view) {
                    Ok(json) => with_type(respond(200, json), "application/json"),
                    Err(error) => respond(500, format!("cannot encode the locks: {error}\n")),
                }
            }
            ("/api/locks/events", _, Some(locks)) => {
                locks_events::stream(locks.clone(), query.prefix)
            }
            ("/locks", _, Some(locks)) => {
                let view = locks.view(query.prefix.as_deref()).await;
                let page =
                    locks_page::render(&view, query.prefix.as_deref(), query.token.as_deref());
                with_type(respond(200, page), "text/html; charset=utf-8")
            }
            (other, _, _) => respond(
                404,
                format!("no admin endpoint {other} (try {})\n", self.endpoints()),
            ),
        }
    }

    /// The endpoints this listener serves, for messages.
    pub(crate) fn endpoints(&self) -> &'static str {
        match (&self.metrics, &self.locks) {
            (Some(_), Some(_)) => "/metrics, /readyz, /livez, /healthz, /locks, /api/locks",
            (Some(_), None) => "/metrics, /readyz, /livez, /healthz",
            (None, Some(_)) => "/readyz, /livez, /healthz, /locks, /api/locks",
            (None, None) => "/readyz, /livez, /healthz",
        }
    }
}

/// A whole text response (admin responses are never cached: they report
/// the present).
fn respond(status: u16, text: impl Into<String>) -> hyper::Response<AdminBody> {
    let body = http_body_util::Full::new(Bytes::from(text.into()))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = hyper::Response::new(body);
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        hyper::header::HeaderValue::from_static("nosniff"),
    );
    response
}

/// `response` with its content type set to `value`.
fn with_type(
    mut response: hyper::Response<AdminBody>,
    value: &'static str,
) -> hyper::Response<AdminBody> {
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(value),
    );
    response
}

/// Compares in time that depends on the lengths only, not on where the
/// first difference is.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// The admin address from `IP:PORT`, or a `PORT` alone for loopback.
///
/// # Errors
/// Neither form, named.
pub(crate) fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse()
        .map_err(|_| format!("{text:?} is neither IP:PORT nor a PORT (for 127.0.0.1:PORT)"))
}

/// Binds the admin address.
///
/// # Errors
/// The address cannot be bound.
pub(crate) async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on --admin {addr}: {e}"))
}

/// Serves the admin endpoints until `stop` turns true; then ends every
/// connection still open (event streams never end by themselves).
pub(crate) async fn serve(
    listener: TcpListener,
    state: AdminState,
    mut stop: watch::Receiver<bool>,
) {
    let state = Arc::new(state);
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next() => continue,
            _ = async { let _ = stop.wait_for(|stop| *stop).await; } => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let state = state.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(state.handle(&request).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_is_loopback_and_tokens_compare_whole() {
        assert_eq!(
            parse_addr("9090"),
            Ok(SocketAddr::from(([127, 0, 0, 1], 9090)))
        );
        assert_eq!(
            parse_addr("0.0.0.0:9090"),
            Ok(SocketAddr::from(([0, 0, 0, 0], 9090)))
        );
        assert!(parse_addr("localhost:9090").is_err_and(|e| e.contains("PORT")));
        assert!(same_bytes(b"s3cret", b"s3cret"));
        assert!(!same_bytes(b"s3cret", b"s3cre"));
        assert!(!same_bytes(b"s3cret", b"s3creT"));
    }
}
