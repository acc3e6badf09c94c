//! The floor of `serve-bench`: what `wasmtime serve` does for a request, with no
//! wardlock at all — a hyper HTTP/1 server on loopback, one Store per request
//! instantiated from a pre-linked `ProxyPre` (pooling allocator), WASI and
//! `wasi:http` only. The component's `wardlock:*` imports are stubbed with
//! traps ([`stub_wardlock`]), so it serves exactly the requests that take no
//! lock (`?lock=none`).
//!
//! The engine is wardlock's own ([`Runtime::with_pooling`]: same code
//! configuration, epoch yields), so the difference to `wardlock serve` is
//! wardlock's per-request work, not the compiler's.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use wardlock_host::runner::{DEFAULT_MEMORY_LIMIT, Runtime, request_pool};
use wardlock_tests::Guest;
use wasmtime::Store;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker, ResourceTable, ResourceType};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// One request's Store data.
struct Bare {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
}

impl WasiView for Bare {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for Bare {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: wasmtime_wasi_http::default_hooks(),
        }
    }
}

/// What every request needs.
struct Served {
    runtime: Runtime,
    pre: ProxyPre<Bare>,
    data: std::path::PathBuf,
    /// Requests served at once: as `wardlock serve`, a request beyond them
    /// waits for a slot rather than failing to instantiate.
    slots: Arc<Semaphore>,
}

/// Serves `component` on a free loopback port with `data` preopened as
/// `/data`, `capacity` requests at once from a pool sized as `wardlock serve
/// --max-concurrent-requests` sizes its own; returns `127.0.0.1:PORT`. The
/// server runs until the process ends.
///
/// # Errors
/// When the component cannot be compiled or linked, or the port not bound.
pub(crate) async fn start(component: &Path, data: &Path, capacity: u32) -> anyhow::Result<String> {
    let pool = request_pool(capacity, DEFAULT_MEMORY_LIMIT);
    let runtime = Runtime::with_pooling(pool)?;
    let component = runtime.compile(component)?;
    let mut linker = Linker::<Bare>::new(runtime.wasm_engine());
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    stub_wardlock(&mut linker, &component)?;
    let pre = ProxyPre::new(linker.instantiate_pre(&component)?)?;
    let served = Arc::new(Served {
        runtime,
        pre,
        data: data.to_path_buf(),
        slots: Arc::new(Semaphore::new(capacity as usize)),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let served = served.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let served = served.clone();
                    async move { served.handle(request).await }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(addr)
}

/// Serves until the process is killed, after printing the address on stdout
/// (`serve-bench --bare-server DATA CAPACITY`).
///
/// # Errors
/// When the server cannot start.
pub(crate) async fn serve_forever(data: &Path, capacity: u32) -> anyhow::Result<()> {
    let addr = start(Path::new(Guest::HttpCounter.path()), data, capacity).await?;
    println!("{addr}");
    std::future::pending().await
}

/// Defines every function of the component's `wardlock:*` imports as a trap
/// and every resource as a host resource nobody creates. (wasmtime's
/// `define_unknown_imports_as_traps` would stub the WASI interfaces the
/// component imports at newer patch versions than the linker names, too.)
fn stub_wardlock(linker: &mut Linker<Bare>, component: &Component) -> anyhow::Result<()> {
    let engine = linker.engine().clone();
    let ty = component.component_type();
    for (name, import) in ty.imports(&engine) {
        let ComponentItem::ComponentInstance(instance) = import.ty else {
            continue;
        };
        if !name.starts_with("wardlock:") {
            continue;
        }
        let mut stubs = linker.instance(name)?;
        for (item, export) in instance.exports(&engine) {
            match export.ty {
                ComponentItem::ComponentFunc(_) => {
                    let what = format!("{name}#{item}");
                    stubs.func_new(item, move |_, _, _, _| {
                        Err(wasmtime::format_err!(
                            "{what}: no wardlock in the bare server"
                        ))
                    })?;
                }
                ComponentItem::Resource(_) => {
                    stubs.resource(item, ResourceType::host::<()>(), |_, _| Ok(()))?;
                }
                _ => {}
            }
        }
    }
    Ok(())
}

impl Served {
    /// One request in a new instance.
    async fn handle(
        &self,
        request: hyper::Request<Incoming>,
    ) -> anyhow::Result<hyper::Response<HyperOutgoingBody>> {
        let slot = self.slots.clone().acquire_owned().await?;
        let mut wasi = WasiCtx::builder();
        wasi.preopened_dir(&self.data, "/data", FsPerms::ReadWrite)
            .map_err(|e| anyhow::anyhow!("cannot preopen /data: {e}"))?;
        let state = Bare {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(self.runtime.wasm_engine(), state);
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let incoming = store
            .data_mut()
            .http()
            .new_incoming_request(Scheme::Http, request)?;
        let out = store.data_mut().http().new_response_outparam(sender)?;
        let pre = self.pre.clone();
        let task = tokio::spawn(async move {
            let _slot = slot;
            let proxy = pre.instantiate_async(&mut store).await?;
            proxy
                .wasi_http_incoming_handler()
                .call_handle(&mut store, incoming, out)
                .await
        });
        match receiver.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(code)) => anyhow::bail!("the guest failed the request: {code:?}"),
            Err(_) => {
                let ended = task.await.context("request task")?;
                anyhow::bail!("the guest set no response: {ended:?}")
            }
        }
    }
}
