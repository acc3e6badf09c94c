//! Choosing and configuring an engine from the command line: every engine's
//! settings rendered as flags, the chosen engine's read back.

use std::sync::Arc;

use anyhow::bail;
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Arg, ArgAction, ArgMatches};

use super::{
    CommonFlags, Engine, EngineConfig, REMOTE_SETTINGS, Registry, Setting, SettingKind, Settings,
    Value, warn_about,
};

impl Registry {
    /// `command` (one that flattens [`CommonFlags`]) with `--backend` taking
    /// the registered names, the shared remote settings (once) and every
    /// engine's own settings added as flags.
    pub fn flags(&self, command: clap::Command) -> clap::Command {
        let values: Vec<PossibleValue> = self
            .engines
            .iter()
            .map(|e| PossibleValue::new(e.name()).help(e.about()))
            .collect();
        let command = command.mut_arg("backend", |arg| {
            arg.value_parser(PossibleValuesParser::new(values))
        });
        let remote: &[Setting] = if self.any_remote() {
            REMOTE_SETTINGS
        } else {
            &[]
        };
        let own = self.engines.iter().flat_map(|e| e.settings());
        remote
            .iter()
            .chain(own)
            .fold(command, |command, setting| command.arg(flag(setting)))
    }

    /// The first flag given that chooses an engine (`--zookeeper`), if any.
    pub fn choosing_flag(&self, matches: &ArgMatches) -> Option<String> {
        self.engines
            .iter()
            .find_map(|e| chooser_given(e.as_ref(), matches))
            .map(|s| format!("--{}", s.flag))
    }

    /// The engine configuration the flags describe: `--backend NAME`, else
    /// the engine a flag of its own chose (`--zookeeper HOST`), else the
    /// default engine.
    ///
    /// # Errors
    /// Flags of two engines, or of an engine other than `--backend`'s; a
    /// choosing flag missing for `--backend`'s engine; whatever the chosen
    /// engine finds wrong with its settings, naming the flag.
    pub fn config_from_flags(
        &self,
        common: &CommonFlags,
        matches: &ArgMatches,
    ) -> anyhow::Result<Arc<dyn EngineConfig>> {
        let chosen: Vec<(&dyn Engine, &Setting)> = self
            .engines
            .iter()
            .filter_map(|e| chooser_given(e.as_ref(), matches).map(|s| (e.as_ref(), s)))
            .collect();
        let engine = match (&common.backend, chosen.as_slice()) {
            (Some(name), _) => {
                let engine = self.engine(name).ok_or_else(|| {
                    anyhow::anyhow!(
                        "no lock engine {name:?} (known: {})",
                        self.names().join(", ")
                    )
                })?;
                if let Some((other, flag)) = chosen.iter().find(|(e, _)| e.name() != name) {
                    bail!(
                        "--{} needs --backend {} (or no --backend)",
                        flag.flag,
                        other.name()
                    );
                }
                engine
            }
            (None, []) => self.default_engine()?,
            (None, [(engine, _)]) => *engine,
            (None, [(_, first), (_, second), ..]) => {
                bail!(
                    "--{} and --{} choose different lock engines: give one",
                    first.flag,
                    second.flag
                )
            }
        };
        if let Some(chooser) = engine.settings().iter().find(|s| s.chooses)
            && !given(chooser, matches)
        {
            bail!(
                "--backend {} needs --{} {}",
                engine.name(),
                chooser.flag,
                chooser.value_name
            );
        }
        let remote: &[Setting] = if engine.remote() {
            REMOTE_SETTINGS
        } else {
            &[]
        };
        let values = engine
            .settings()
            .iter()
            .chain(remote)
            .filter_map(|s| value(s, matches).map(|v| (s.key, v)))
            .collect::<Vec<_>>();
        let settings = Settings::from_flags(engine.settings(), values);
        let config = engine
            .configure(&settings)
            .map_err(|(at, why)| anyhow::anyhow!("{}", mistake_line(&at, &why)))?;
        warn_about(&settings);
        Ok(config)
    }
}

/// One line for a mistake: `why` alone when it names the flag already.
fn mistake_line(at: &str, why: &str) -> String {
    if why.contains(at) {
        why.to_owned()
    } else {
        format!("{at}: {why}")
    }
}

/// The clap argument of `setting`: `--flag VALUE`, or a bare `--flag` for a
/// switch. Defaults are not clap's: [`Settings`] applies them, so a setting
/// given is told from one left at its default.
fn flag(setting: &Setting) -> Arg {
    let help = match (setting.kind, setting.default) {
        (SettingKind::Switch, _) | (_, None) => setting.help.to_owned(),
        (_, Some(default)) => format!("{} [default: {default}]", setting.help),
    };
    let arg = Arg::new(setting.flag).long(setting.flag).help(help);
    match setting.kind {
        SettingKind::Switch => arg.action(ArgAction::SetTrue),
        _ => arg
            .value_name(setting.value_name)
            .action(ArgAction::Set)
            .num_args(1),
    }
}

/// Whether `setting`'s flag was given.
fn given(setting: &Setting, matches: &ArgMatches) -> bool {
    match setting.kind {
        SettingKind::Switch => {
            matches.try_get_one::<bool>(setting.flag).ok().flatten() == Some(&true)
        }
        _ => matches
            .try_get_one::<String>(setting.flag)
            .ok()
            .flatten()
            .is_some(),
    }
}

/// The value given for `setting`, if any. A switch's flag turns it to the
/// opposite of its default (`--no-local-handoff`: `local_handoff` off).
fn value(setting: &Setting, matches: &ArgMatches) -> Option<Value> {
    if !given(setting, matches) {
        return None;
    }
    match setting.kind {
        SettingKind::Switch => Some(Value::Bool(setting.default != Some("true"))),
        _ => matches
            .try_get_one::<String>(setting.flag)
            .ok()
            .flatten()
            .map(|text| Value::Text(text.clone())),
    }
}

/// The engine's choosing setting, when its flag was given.
fn chooser_given<'a>(engine: &'a dyn Engine, matches: &ArgMatches) -> Option<&'a Setting> {
    engine
        .settings()
        .iter()
        .find(|s| s.chooses && given(s, matches))
}
