//! The host side of `wardlock:lock@0.3.0` (`wit/v0.3/lock.wit`; its
//! generated bindings are [`super::bindings_v3`]).

mod election;
mod guarded;
mod locks;
mod many;
