//! Rust bindings generated from the standard `wasi:keyvalue@0.2.0-draft`
//! (`wit/keyvalue-0.2.0-draft/`: the WIT `wasmtime-wasi-keyvalue` 48.0.8
//! ships, unchanged; that crate keeps its own bindings private). Async, so a
//! call waits on the lock service without blocking the host's thread, and
//! trappable, so a host failure is a trap rather than a guest-visible error.

wasmtime::component::bindgen!({
    path: "wit/keyvalue-0.2.0-draft",
    world: "wasi:keyvalue/imports",
    imports: { default: async | trappable },
    with: {
        "wasi:keyvalue/store.bucket": crate::keyvalue::BucketHandle,
    },
});
