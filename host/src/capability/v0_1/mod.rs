//! The host side of `wardlock:lock@0.1.0` (`wit/lock.wit`; its generated
//! bindings are [`super::bindings`]): one file per interface.

mod locks;
