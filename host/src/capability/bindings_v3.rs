//! Rust bindings generated from `wit/v0.3/` (package `wardlock:lock@0.3.0`,
//! WASI 0.3's style) for the host side, beside those of 0.1.0 and 0.2.2.
//!
//! The WIT's `async func`s are concurrent host functions (wasmtime's
//! `HostWithStore`, taking an `Accessor`): while one waits, the instance's
//! other tasks run, and a guest that cancels the call drops its future.
//! `not-held` builds a `future<status>` in the store, so it takes the store
//! too. The `lock` resource is the same host type as in 0.1.0 and 0.2.2
//! ([`LockHandle`](crate::capability::LockHandle)), and so is `permit`
//! ([`PermitHandle`](crate::capability::PermitHandle)), and so is
//! `leadership` ([`LeadershipHandle`](crate::capability::LeadershipHandle)).
//! `observe` builds a `stream` in the store, so it takes the store too.

wasmtime::component::bindgen!({
    path: "wit/v0.3",
    world: "wardlock:lock/guest",
    imports: {
        "wardlock:lock/locks.[method]lock.not-held": store | trappable,
        "wardlock:lock/locks.[method]permit.not-held": store | trappable,
        "wardlock:lock/locks.[method]lock.revoked": store | trappable,
        "wardlock:lock/election.[method]leadership.not-held": store | trappable,
        "wardlock:lock/election.observe": store | trappable,
        default: trappable,
    },
    with: {
        "wardlock:lock/locks.lock": crate::capability::handle::LockHandle,
        "wardlock:lock/locks.permit": crate::capability::permit::PermitHandle,
        "wardlock:lock/election.leadership": crate::capability::leadership::LeadershipHandle,
    },
});
