//! Rust bindings generated from the standard `wasi:keyvalue@0.2.0-draft2`
//! (`wit/keyvalue-0.2.0-draft2/`: the WIT of the proposal's repository after
//! its `cas` change, as Spin's SDK imports it, unchanged). It differs from
//! 0.2.0-draft in `atomics` (a `cas` resource and `swap`; `increment` takes
//! and returns an `s64`) and in `list-keys`' cursor (a string). Async and
//! trappable, as the 0.2.0-draft bindings are.

wasmtime::component::bindgen!({
    path: "wit/keyvalue-0.2.0-draft2",
    world: "wasi:keyvalue/imports",
    imports: { default: async | trappable },
    with: {
        "wasi:keyvalue/store.bucket": crate::keyvalue::BucketHandle,
        "wasi:keyvalue/atomics.cas": crate::keyvalue::CasHandle,
    },
});
