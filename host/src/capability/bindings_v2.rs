//! Rust bindings generated from `wit/v0.2/` (package `wardlock:lock@0.2.2`)
//! for the host side, beside those of 0.1.0 ([`super::bindings`]).
//!
//! Async and trappable like 0.1.0's. The `lock` resource is the same host type
//! as in 0.1.0 ([`LockHandle`](crate::capability::LockHandle)), and
//! `wasi:io/poll`'s pollable is wasmtime-wasi's, so a guest waits on a lock,
//! a timer and a stream in one `poll`.

wasmtime::component::bindgen!({
    path: "wit/v0.2",
    world: "wardlock:lock/guest",
    imports: { default: async | trappable },
    with: {
        "wasi:io/poll": wasmtime_wasi::p2::bindings::io::poll,
        "wardlock:lock/locks.lock": crate::capability::handle::LockHandle,
        "wardlock:lock/locks.pending-lock": crate::capability::pending::PendingLock,
        "wardlock:lock/locks.permit": crate::capability::permit::PermitHandle,
        "wardlock:lock/election.leadership": crate::capability::leadership::LeadershipHandle,
        "wardlock:lock/election.observer": crate::capability::leadership::ElectionObserver,
    },
});
