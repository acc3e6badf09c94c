//! Stop signals for the long-running commands (`run`, `serve`).
//!
//! The first SIGTERM or SIGINT asks for a clean stop: guests are ended, their
//! locks released and the engine session closed, so other hosts get the locks
//! within a round trip instead of a session timeout. A second signal exits at
//! once (an operator who presses Ctrl-C twice means it).

/// A stop signal, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StopSignal {
    Terminate,
    Interrupt,
}

impl StopSignal {
    /// The signal's name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            StopSignal::Terminate => "SIGTERM",
            StopSignal::Interrupt => "SIGINT",
        }
    }

    /// The shell's exit code for a process ended by this signal (128 + its
    /// number).
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            StopSignal::Terminate => 128 + 15,
            StopSignal::Interrupt => 128 + 2,
        }
    }
}

/// Resolves with the first SIGTERM or SIGINT received. The handlers are
/// installed by this call, not at the first poll: call it before anything
/// that another process could react to (a guest taking a lock), or a signal
/// in between ends the process at once, without releasing its locks (a
/// `wardlock run` stopped right after its guest took a lock held it until
/// its session timed out).
///
/// # Cancellation safety
/// Cancel safe: a dropped wait leaves the signals as they were (a signal that
/// arrives later is seen by the next wait).
pub(super) fn stop_signal() -> impl Future<Output = StopSignal> + Send + 'static {
    #[cfg(unix)]
    let handlers = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        )
    };
    async move {
        #[cfg(unix)]
        {
            match handlers {
                (Ok(mut term), Ok(mut int)) => tokio::select! {
                    _ = term.recv() => StopSignal::Terminate,
                    _ = int.recv() => StopSignal::Interrupt,
                },
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                    StopSignal::Interrupt
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            StopSignal::Interrupt
        }
    }
}

/// After a first stop signal: exits the process at once on the next one,
/// skipping whatever clean stop is still under way.
pub(super) fn exit_on_second_signal() {
    tokio::spawn(async {
        let second = stop_signal().await;
        eprintln!("wardlock: {}: exiting now", second.name());
        std::process::exit(second.exit_code());
    });
}
