//! Choosing an engine: from the command line's flags, or from a config file's
//! entry.

use std::path::Path;
use std::sync::Arc;

use anyhow::bail;
use clap::builder::{PossibleValue, PossibleValuesParser};

use super::Registry;
use wardlock_backend::registry::{CommonFlags, Engine, EngineConfig, Entry, Mistake};

impl Registry {
    /// `command` (one that flattens [`CommonFlags`]) with every engine's flags
    /// added and `--backend` taking the registered names.
    pub fn flags(&self, command: clap::Command) -> clap::Command {
        let values: Vec<PossibleValue> = self
            .engines
            .iter()
            .map(|e| PossibleValue::new(e.name()).help(e.about()))
            .collect();
        let command = command.mut_arg("backend", |arg| {
            arg.value_parser(PossibleValuesParser::new(values))
        });
        self.engines
            .iter()
            .fold(command, |command, engine| engine.flags(command))
    }

    /// The first flag given that chooses an engine (`--zookeeper`), if any.
    pub fn choosing_flag(&self, matches: &clap::ArgMatches) -> Option<&'static str> {
        self.engines.iter().find_map(|e| e.chosen_by(matches))
    }

    /// The engine configuration the flags describe: `--backend NAME`, else
    /// the engine a flag of its own chose (`--zookeeper HOST`), else the
    /// default engine.
    ///
    /// # Errors
    /// Flags of two engines, or of an engine other than `--backend`'s;
    /// whatever the chosen engine finds wrong with its flags.
    pub fn config_from_flags(
        &self,
        common: &CommonFlags,
        matches: &clap::ArgMatches,
    ) -> anyhow::Result<Arc<dyn EngineConfig>> {
        let chosen: Vec<(&dyn Engine, &'static str)> = self
            .engines
            .iter()
            .filter_map(|e| e.chosen_by(matches).map(|flag| (e.as_ref(), flag)))
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
                    bail!("{flag} needs --backend {} (or no --backend)", other.name());
                }
                engine
            }
            (None, []) => self.default_engine()?,
            (None, [(engine, _)]) => *engine,
            (None, [(_, first), (_, second), ..]) => {
                bail!("{first} and {second} choose different lock engines: give one")
            }
        };
        engine.config_from_flags(common, matches)
    }

    /// The engine configuration of a config file's entry `[backends.LABEL]`,
    /// whose `kind` names the engine.
    ///
    /// # Errors
    /// An unknown `kind`, or what the engine finds wrong with the entry,
    /// each naming its key.
    pub fn config_from_entry(
        &self,
        label: &str,
        mut table: toml::Table,
        base: &Path,
    ) -> Result<Arc<dyn EngineConfig>, Mistake> {
        let key = format!("backends.{label}");
        let engine = match table.remove("kind") {
            None => {
                return Err((
                    format!("{key}.kind"),
                    format!("missing: name an engine ({})", self.names().join(", ")),
                ));
            }
            Some(toml::Value::String(kind)) => self.engine(&kind).ok_or_else(|| {
                (
                    format!("{key}.kind"),
                    format!(
                        "unknown engine {kind:?} (known: {})",
                        self.names().join(", ")
                    ),
                )
            })?,
            Some(other) => {
                return Err((
                    format!("{key}.kind"),
                    format!("must be a string naming an engine, not {other}"),
                ));
            }
        };
        engine.config_from_entry(Entry::new(key, table, base))
    }
}
