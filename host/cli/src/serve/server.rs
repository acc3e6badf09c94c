//! Accepting connections, routing requests to plugins, graceful shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use hyper::server::conn::http1;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;
use wardlock_host::backend::LockBackend;
use wardlock_host::runner::{ProxyRunner, ResponseBody, respond};
use wasmtime_wasi_http::io::TokioIo;

use super::plan::{ServePlan, route_matches};
use crate::admin;
use crate::admin::metrics::Metrics;
use crate::signal::{exit_on_second_signal, stop_signal};

/// A plugin on a route prefix.
pub(super) struct Route {
    /// Path prefix (segment-wise).
    pub prefix: String,
    /// The plugin's name, for metrics and logs.
    pub plugin: String,
    /// Its runner.
    pub runner: Arc<ProxyRunner>,
}

struct Router {
    /// Longest prefix first, so the most specific route wins.
    routes: Vec<Route>,
    metrics: Arc<Metrics>,
}

impl Router {
    async fn handle(
        &self,
        request: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<ResponseBody> {
        let path = request.uri().path().to_owned();
        let Some(route) = self.routes.iter().find(|r| route_matches(&r.prefix, &path)) else {
            return respond(404, format!("no plugin serves {path}\n"));
        };
        let span = tracing::info_span!("request", plugin = %route.plugin, method = %request.method(), %path);
        let metrics = self.metrics.clone();
        let plugin = route.plugin.clone();
        let started = Instant::now();
        let on_end = Box::new(move |outcome: wardlock_host::runner::RequestOutcome| {
            tracing::info!(
                plugin,
                outcome = outcome.label(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "request ended"
            );
            if let wardlock_host::runner::RequestOutcome::Failed(why) = &outcome {
                tracing::warn!(plugin, "request failed: {why}");
            }
            metrics.request_ended(&plugin, outcome.label());
        });
        route.runner.handle(request, on_end).instrument(span).await
    }
}

/// A task run beside the server until it stops (a singleton's campaign and
/// command).
pub(super) type Background = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Serves `routes` on the plan's address (and the admin endpoints) until
/// SIGTERM or SIGINT, then drains: stops accepting, lets in-flight requests
/// finish within the grace period, stops the rest, and waits for their locks
/// to be released. `singletons` run beside it and are stopped (resigning)
/// before the backends close.
pub(super) async fn run(
    plan: &ServePlan,
    mut routes: Vec<Route>,
    backends: BTreeMap<String, Arc<dyn LockBackend>>,
    metrics: Arc<Metrics>,
    singletons: Vec<Background>,
    table: super::locks_source::LockTable,
) -> anyhow::Result<i32> {
    routes.sort_by_key(|r| std::cmp::Reverse(r.prefix.trim_end_matches('/').len()));
    let router = Arc::new(Router {
        routes,
        metrics: metrics.clone(),
    });
    let listener = TcpListener::bind(plan.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", plan.listen))?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut background = JoinSet::new();
    if let Some(addr) = plan.admin {
        let admin = admin::bind(addr).await?;
        let state =
            admin::AdminState::new(metrics.clone(), backends.clone(), plan.admin_token.clone())
                .with_locks(table);
        eprintln!(
            "wardlock: admin on http://{} ({})",
            admin.local_addr()?,
            state.endpoints()
        );
        background.spawn(admin::serve(admin, state, stop_rx.clone()));
    }
    // Installed before anyone is told we serve and before a singleton runs
    // (see `stop_signal`).
    let signal = stop_signal();
    for route in &router.routes {
        eprintln!(
            "wardlock: serving {} on http://{}{}",
            route.plugin,
            listener.local_addr()?,
            route.prefix
        );
    }

    let mut singleton_tasks = JoinSet::new();
    for singleton in singletons {
        singleton_tasks.spawn(singleton);
    }
    let mut connections = JoinSet::new();
    tokio::pin!(signal);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        continue;
                    }
                };
                let router = router.clone();
                let mut stop = stop_rx.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let router = router.clone();
                        async move { Ok::<_, std::convert::Infallible>(router.handle(request).await) }
                    });
                    let connection = http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(connection);
                    tokio::select! {
                        result = connection.as_mut() => {
                            if let Err(error) = result {
                                tracing::debug!(%error, "connection ended");
                            }
                        }
                        _ = async { let _ = stop.wait_for(|stop| *stop).await; } => {
                            connection.as_mut().graceful_shutdown();
                            let _ = connection.await;
                        }
                    }
                });
            }
            Some(_) = connections.join_next() => {}
            signal = &mut signal => {
                eprintln!("wardlock: {}: stopping; in-flight requests get {:.1}s (a second signal exits at once)", signal.name(), plan.shutdown_grace.as_secs_f64());
                exit_on_second_signal();
                break;
            }
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(plan.shutdown_grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        eprintln!(
            "wardlock: {} connection(s) still busy after the grace period: stopping them",
            connections.len()
        );
        connections.shutdown().await;
    }
    background.shutdown().await;
    // Singletons resign: their commands' Stores and sessions drop now.
    singleton_tasks.shutdown().await;
    // Every instance is gone: let each backend finish releasing their locks
    // and close its session.
    drop(router);
    for (label, backend) in backends {
        tracing::info!(backend = %label, "closing");
        backend.shutdown().await;
    }
    eprintln!("wardlock: stopped");
    Ok(0)
}
