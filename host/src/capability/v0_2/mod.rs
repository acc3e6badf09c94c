//! The host side of `wardlock:lock@0.2.2` (`wit/v0.2/lock.wit`; its
//! generated bindings are [`super::bindings_v2`]): one file per interface.

mod election;
mod guarded;
mod locks;
