//! The core of a lock session, which every engine implements: acquire (wait
//! or try, a lock or a permit), release, a grant's status and its change,
//! downgrade. What only some engines offer (semaphores, revocation, listing
//! contenders, the guarded store, election) is a capability trait of its own,
//! reached through the session's accessor ([`LockSession::election`] …) and
//! absent by default, so an engine that offers nothing more compiles with the
//! core alone.

use std::time::Duration;

use async_trait::async_trait;

use crate::contenders::Contention;
use crate::election::Election;
use crate::guarded::GuardedStore;
use crate::keyvalue::KeyValue;
use crate::name::LockName;
use crate::revocation::Revocation;
use crate::semaphore::Semaphores;
use crate::{BackendError, Grant, GrantId, GrantStatus, Mode, Request, Result, StatusChange};

/// A set of grants and waits that end together.
///
/// Dropping the session releases every grant it holds (in the background when that
/// needs I/O); dropping an [`LockSession::acquire`] future withdraws its wait.
#[async_trait]
pub trait LockSession: Send + Sync {
    /// Waits until `request` (a lock in a mode, or a semaphore permit) is
    /// granted, or until `timeout` passes. What backends implement; callers
    /// use [`LockSession::acquire`] and [`Semaphores::acquire_permit`].
    ///
    /// # Errors
    /// [`BackendError::Timeout`] when `timeout` passed first;
    /// [`BackendError::Unavailable`] when the lock service failed;
    /// [`BackendError::Lost`] when the session ended while waiting;
    /// for permits, those of [`Semaphores::acquire_permit`].
    ///
    /// # Cancellation safety
    /// Cancel safe: dropping the future before it completes leaves nothing queued
    /// and nothing held, even if the grant raced with the drop.
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant>;

    /// Grants `request` only if that needs no waiting; `Ok(None)` otherwise.
    /// What backends implement; callers use [`LockSession::try_acquire`] and
    /// [`Semaphores::try_acquire_permit`].
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed; for
    /// permits, those of [`Semaphores::acquire_permit`] but `Timeout`.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`].
    async fn try_acquire_request(&self, request: Request<'_>) -> Result<Option<Grant>>;

    /// Waits until `name` is granted in `mode`, or until `timeout` passes.
    ///
    /// # Errors
    /// [`BackendError::Timeout`] when `timeout` passed first;
    /// [`BackendError::Unavailable`] when the lock service failed;
    /// [`BackendError::Lost`] when the session ended while waiting.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`].
    async fn acquire(
        &self,
        name: &LockName,
        mode: Mode,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        self.acquire_request(Request::lock(name, mode), timeout)
            .await
    }

    /// Takes `name` in `mode` only if that needs no waiting; `Ok(None)` otherwise.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`].
    async fn try_acquire(&self, name: &LockName, mode: Mode) -> Result<Option<Grant>> {
        self.try_acquire_request(Request::lock(name, mode)).await
    }

    /// Releases a grant. Returns without waiting for the lock service to confirm:
    /// a backend that needs I/O finishes (and retries) the release in the background.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `grant` is not held by this session.
    fn release(&self, grant: GrantId) -> Result<()>;

    /// What `grant` currently guarantees.
    fn status(&self, grant: GrantId) -> GrantStatus;

    /// Resolves with `grant`'s status once it differs from `seen`; at once
    /// when it differs already (a grant this session does not hold is
    /// [`GrantStatus::Released`]).
    ///
    /// Event driven: the change itself wakes the future (a release, an
    /// injected fault, the backend noticing that its connection is suspended
    /// or its session lost), never a polling loop. It is how a guest's
    /// `lock.subscribe` learns that a lock stopped being held.
    ///
    /// # Cancellation safety
    /// Cancel safe: the future only observes; dropping it changes nothing.
    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange;

    /// Downgrades: takes a shared grant of the name and at the queue position of
    /// `exclusive` (an exclusive grant this session holds), granted at once. Once
    /// `exclusive` is released, the shared grant lets other readers in and keeps
    /// every writer that queued meanwhile waiting.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `exclusive` is not held here;
    /// [`BackendError::Lost`] when it was lost; [`BackendError::Unsupported`] when
    /// the backend cannot downgrade (the default).
    ///
    /// # Cancellation safety
    /// Cancel safe: a grant made for a dropped call is released with the session.
    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant> {
        let _ = exclusive;
        Err(BackendError::Unsupported(
            "this lock backend cannot downgrade".into(),
        ))
    }

    /// Semaphore permits, if this engine has them. An engine answers with
    /// itself (`Ok(self)`); a wrapper with itself too, so permit requests
    /// pass through its `acquire_request`.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] when the engine has no semaphores (the
    /// default).
    fn semaphores(&self) -> Result<&dyn Semaphores> {
        Err(absent::semaphores())
    }

    /// Revocation (asking a holder to give its lock up), if this engine has
    /// it.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] when it has not (the default).
    fn revocation(&self) -> Result<&dyn Revocation> {
        Err(absent::revocation())
    }

    /// Listing a lock's holders and waiters, if this engine can.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] when it cannot (the default).
    fn contention(&self) -> Result<&dyn Contention> {
        Err(absent::contention())
    }

    /// The guarded store ([`crate::guarded`]), if this engine has one.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] when it has not (the default).
    fn guarded_store(&self) -> Result<&dyn GuardedStore> {
        Err(absent::guarded_store())
    }

    /// The key-value store ([`crate::keyvalue`]), if this engine has one.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] when it has not (the default).
    fn key_value(&self) -> Result<&dyn KeyValue> {
        Err(absent::key_value())
    }

    /// Leader election ([`crate::election`]), if this engine has it.
    ///
    /// # Errors
    /// [`BackendError::Unsupported`] when it has not (the default).
    fn election(&self) -> Result<&dyn Election> {
        Err(absent::election())
    }
}

/// The errors of the capabilities an engine does not offer: what the
/// accessors above answer by default, and [`crate::handoff::HandoffSession`]'s.
pub(crate) mod absent {
    use crate::BackendError;

    fn unsupported(what: &str) -> BackendError {
        BackendError::Unsupported(format!("this lock backend {what}"))
    }

    pub(crate) fn semaphores() -> BackendError {
        unsupported("has no semaphores")
    }

    pub(crate) fn revocation() -> BackendError {
        unsupported("has no revocation")
    }

    pub(crate) fn contention() -> BackendError {
        unsupported("cannot list a lock's contenders")
    }

    pub(crate) fn guarded_store() -> BackendError {
        unsupported("has no guarded store")
    }

    pub(crate) fn key_value() -> BackendError {
        unsupported("has no key-value store")
    }

    pub(crate) fn election() -> BackendError {
        crate::election::no_elections()
    }
}

/// Writes, inside an engine's `impl LockSession` block, the accessors of the
/// capabilities the session offers itself (each answers `Ok(self)`), by the
/// accessor's name: `offers!(semaphores, revocation, contention,
/// guarded_store, election)`. The session must implement each capability's
/// trait.
#[macro_export]
macro_rules! offers {
    ($($accessor:ident),+ $(,)?) => {
        $($crate::offers!(@one $accessor);)+
    };
    (@one semaphores) => {
        fn semaphores(&self) -> ::std::result::Result<&dyn $crate::Semaphores, $crate::BackendError> {
            Ok(self)
        }
    };
    (@one revocation) => {
        fn revocation(&self) -> ::std::result::Result<&dyn $crate::Revocation, $crate::BackendError> {
            Ok(self)
        }
    };
    (@one contention) => {
        fn contention(&self) -> ::std::result::Result<&dyn $crate::Contention, $crate::BackendError> {
            Ok(self)
        }
    };
    (@one guarded_store) => {
        fn guarded_store(&self) -> ::std::result::Result<&dyn $crate::GuardedStore, $crate::BackendError> {
            Ok(self)
        }
    };
    (@one key_value) => {
        fn key_value(&self) -> ::std::result::Result<&dyn $crate::KeyValue, $crate::BackendError> {
            Ok(self)
        }
    };
    (@one election) => {
        fn election(&self) -> ::std::result::Result<&dyn $crate::Election, $crate::BackendError> {
            Ok(self)
        }
    };
}
