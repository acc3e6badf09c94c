//! The admin endpoints: `GET /metrics` (Prometheus text), `GET /livez` (the
//! process serves: always 200), `GET /readyz` (every backend can grant locks
//! now: 200, else 503; each backend's line names it, its kind and its state)
//! and `GET /healthz` (the same as `/readyz`). With a token configured, every
//! request must carry `Authorization: Bearer TOKEN` (else 401).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::server::conn::http1;
use tokio::net::TcpListener;
use tokio::sync::watch;
use wardlock_host::backend::{Health, LockBackend};
use wardlock_host::runner::{ResponseBody, respond};
use wardlock_host::secret::Secret;
use wasmtime_wasi_http::io::TokioIo;

use super::metrics::Metrics;

/// What the admin endpoints report on.
#[derive(Clone)]
pub(super) struct AdminState {
    metrics: Arc<Metrics>,
    backends: BTreeMap<String, Arc<dyn LockBackend>>,
    token: Option<Secret>,
}

impl AdminState {
    /// Reports `metrics` and the health of `backends`, to requests bearing
    /// `token` if there is one.
    pub(super) fn new(
        metrics: Arc<Metrics>,
        backends: BTreeMap<String, Arc<dyn LockBackend>>,
        token: Option<Secret>,
    ) -> Self {
        AdminState {
            metrics,
            backends,
            token,
        }
    }

    /// Whether `request` bears the token (or none is required).
    fn authorized(&self, request: &hyper::Request<hyper::body::Incoming>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let given = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        same_bytes(given.as_bytes(), token.expose().as_bytes())
    }

    /// Updates the session-state gauge of every backend (by its label; an
    /// in-process backend is always connected); returns each backend's label,
    /// kind and health.
    fn refresh(&self) -> Vec<(String, &'static str, Health)> {
        let mut health = Vec::new();
        for (label, backend) in &self.backends {
            let state = backend.health();
            let value = match state {
                Health::Connected => 1,
                Health::Connecting => 0,
                Health::Down => -1,
            };
            self.metrics.set_session_state(label, value);
            health.push((label.clone(), backend.kind(), state));
        }
        health
    }

    fn handle(
        &self,
        request: &hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<ResponseBody> {
        if !self.authorized(request) {
            let mut response = respond(
                401,
                "the admin endpoints need Authorization: Bearer TOKEN (see --admin-token-file)\n",
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
        match request.uri().path() {
            "/metrics" => {
                self.refresh();
                let mut response = respond(200, self.metrics.encode());
                response.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static(
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    ),
                );
                response
            }
            "/livez" => respond(200, "live\n"),
            "/readyz" | "/healthz" => {
                let health = self.refresh();
                let mut text = String::new();
                for (label, kind, state) in &health {
                    text.push_str(&format!("{label} ({kind}): {state:?}\n"));
                }
                let healthy = health
                    .iter()
                    .all(|(_, _, state)| *state == Health::Connected);
                respond(if healthy { 200 } else { 503 }, text)
            }
            other => respond(
                404,
                format!("no admin endpoint {other} (try /metrics, /readyz, /livez or /healthz)\n"),
            ),
        }
    }
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
pub(super) fn parse_addr(text: &str) -> Result<SocketAddr, String> {
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
pub(super) async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on --admin {addr}: {e}"))
}

/// Serves the admin endpoints until `stop` turns true.
pub(super) async fn serve(
    listener: TcpListener,
    state: AdminState,
    mut stop: watch::Receiver<bool>,
) {
    let state = Arc::new(state);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = async { let _ = stop.wait_for(|stop| *stop).await; } => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, std::convert::Infallible>(state.handle(&request)) }
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
