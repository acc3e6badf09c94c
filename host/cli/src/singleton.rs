//! `wardlock run --singleton NAME`: run the plugin only while this host leads
//! the election NAME. Every host started with the same NAME campaigns; one
//! leads and runs the plugin, the others stand by. A standby takes over when
//! the leader stops (it resigns at once), dies or is cut off (its session
//! ends on the lock service): the leader's host reports its leadership `lost`
//! no later than another host can win, and stops its plugin then, so two
//! hosts' plugins never run at once.
//!
//! The plugin learns its term from the environment: `WARDLOCK_SINGLETON`
//! (the name) and `WARDLOCK_SINGLETON_TERM` (the leadership's fencing token,
//! strictly greater than every earlier leader's) — a token to hand whatever
//! it writes.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::task::JoinSet;
use wasmtime::component::Component;

use super::signal::{StopSignal, exit_on_second_signal};
use wardlock_host::backend::{BackendError, GrantId, GrantStatus, LockSession};
use wardlock_host::name::LockName;
use wardlock_host::runner::{InstanceReport, Runner, RunnerConfig, Runtime};

/// How long a standby waits before campaigning again after the lock
/// service could not be reached.
const RETRY: Duration = Duration::from_secs(1);

/// Told when this host begins (`true`) or stops (`false`) leading.
pub(super) type OnTerm = Box<dyn Fn(bool) + Send + Sync>;

/// What one plugin run under `--singleton` needs.
pub(super) struct Singleton {
    pub name: LockName,
    /// What this host proclaims (who it is).
    pub value: String,
    pub runtime: Runtime,
    pub component: Component,
    pub plugin: String,
    pub instances: usize,
    pub guest_args: Vec<String>,
    /// Told of every change of leadership (serve's metrics).
    pub on_term: Option<OnTerm>,
}

/// How a term of leadership ended.
enum TermEnd {
    /// Every instance finished: their reports.
    Finished(Vec<InstanceReport>),
    /// The leadership was lost (or the host ended it): campaign again.
    Lost(GrantStatus),
    /// A stop signal.
    Stopped(StopSignal),
}

impl Singleton {
    /// Campaigns, runs the plugin while leading, and campaigns again after a
    /// loss, until the plugin's instances finish or a stop signal comes.
    /// Returns the instances' reports (none when stopped while standing by)
    /// and the signal, if one stopped it.
    ///
    /// # Errors
    /// A refusal of the lock service (credentials, configuration), a
    /// runner that cannot be built, an instance task that panicked.
    ///
    /// # Cancellation safety
    /// Not cancel safe: a dropped run abandons its leadership to the
    /// session's end (the plugin's instances are aborted with it).
    pub(crate) async fn run(
        &self,
        config: &RunnerConfig,
        stop: impl Future<Output = StopSignal>,
    ) -> anyhow::Result<(Vec<InstanceReport>, Option<StopSignal>)> {
        let signal = stop;
        tokio::pin!(signal);
        loop {
            let session = config
                .backend
                .open_session(&format!("singleton {} ({})", self.name, self.value));
            eprintln!("wardlock: standing by for singleton {}", self.name);
            let campaign = async {
                session
                    .election()?
                    .campaign(&self.name, &self.value, None)
                    .await
            };
            let won = tokio::select! {
                won = campaign => won,
                signal = &mut signal => return Ok((Vec::new(), Some(signal))),
            };
            let grant = match won {
                Ok(grant) => grant,
                Err(error @ (BackendError::Unavailable(_) | BackendError::Lost)) => {
                    eprintln!(
                        "wardlock: campaigning for singleton {}: {error}; trying again in {RETRY:?}",
                        self.name
                    );
                    tokio::select! {
                        () = tokio::time::sleep(RETRY) => continue,
                        signal = &mut signal => return Ok((Vec::new(), Some(signal))),
                    }
                }
                Err(error) => return Err(error).context("campaigning for the singleton"),
            };
            eprintln!(
                "wardlock: leading singleton {} (term {}): starting {} instance(s) of {}",
                self.name, grant.token, self.instances, self.plugin
            );
            self.told(true);
            let ended = self
                .term(config, &*session, grant.id, grant.token, &mut signal)
                .await;
            self.told(false);
            match ended? {
                TermEnd::Finished(reports) => {
                    let _ = session.release(grant.id);
                    return Ok((reports, None));
                }
                TermEnd::Stopped(signal) => {
                    let _ = session.release(grant.id);
                    return Ok((Vec::new(), Some(signal)));
                }
                TermEnd::Lost(status) => eprintln!(
                    "wardlock: singleton {} is {status:?} here: plugin stopped; campaigning again",
                    self.name
                ),
            }
        }
    }

    fn told(&self, leading: bool) {
        if let Some(on_term) = &self.on_term {
            on_term(leading);
        }
    }

    /// Runs the plugin for one term of leadership `grant` (token `term`).
    async fn term(
        &self,
        config: &RunnerConfig,
        session: &dyn LockSession,
        grant: GrantId,
        term: u64,
        signal: &mut std::pin::Pin<&mut impl Future<Output = StopSignal>>,
    ) -> anyhow::Result<TermEnd> {
        let mut config = config.clone();
        config
            .env
            .push(("WARDLOCK_SINGLETON".into(), self.name.to_string()));
        config
            .env
            .push(("WARDLOCK_SINGLETON_TERM".into(), term.to_string()));
        let runner = Arc::new(Runner::new(
            &self.runtime,
            &self.component,
            &self.plugin,
            config,
        )?);
        let mut tasks = JoinSet::new();
        for instance in 0..self.instances {
            let (runner, args) = (runner.clone(), self.guest_args.clone());
            tasks.spawn(async move { runner.run(instance, &args).await });
        }
        let lost = lost(session, grant);
        tokio::pin!(lost);
        let mut reports = Vec::with_capacity(self.instances);
        loop {
            tokio::select! {
                joined = tasks.join_next() => match joined {
                    Some(joined) => reports.push(joined.context("an instance task panicked")?),
                    None => return Ok(TermEnd::Finished(reports)),
                },
                status = &mut lost => {
                    stop(&mut tasks).await?;
                    return Ok(TermEnd::Lost(status));
                }
                signal = signal.as_mut() => {
                    eprintln!(
                        "wardlock: {}: stopping the singleton's plugin and resigning (a second signal exits at once)",
                        signal.name()
                    );
                    exit_on_second_signal();
                    stop(&mut tasks).await?;
                    return Ok(TermEnd::Stopped(signal));
                }
            }
        }
    }
}

/// Resolves once leadership `grant` is lost or ended (a suspension that
/// recovers does not count: the lock service cannot have let anyone else
/// win yet).
async fn lost(session: &dyn LockSession, grant: GrantId) -> GrantStatus {
    let mut seen = GrantStatus::Held;
    loop {
        let now = session.status_changed(grant, seen).await;
        if matches!(now, GrantStatus::Lost | GrantStatus::Released) {
            return now;
        }
        seen = now;
    }
}

/// Ends every instance still running (their Stores drop) and waits until
/// they are gone.
async fn stop(tasks: &mut JoinSet<InstanceReport>) -> anyhow::Result<()> {
    tasks.abort_all();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(_) => {}
            Err(error) if error.is_cancelled() => {}
            Err(error) => return Err(error).context("an instance task panicked"),
        }
    }
    Ok(())
}
