//! Choosing and configuring an engine from a config file's `[backends.LABEL]`
//! entry, whose `kind` names the engine.

use std::path::Path;
use std::sync::Arc;

use super::{EngineConfig, Mistake, Registry, Settings, Value, warn_about};

impl Registry {
    /// The engine configuration of a config file's entry `[backends.LABEL]`.
    ///
    /// # Errors
    /// An unknown `kind`, a key the engine does not take, or what the engine
    /// finds wrong with the entry, each naming its key.
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
        let mut values = Vec::with_capacity(table.len());
        for (name, value) in table {
            let value = match value {
                toml::Value::String(text) => Value::Text(text),
                toml::Value::Integer(n) => Value::Integer(n),
                toml::Value::Float(x) => Value::Float(x),
                toml::Value::Boolean(b) => Value::Bool(b),
                other => {
                    return Err((
                        format!("{key}.{name}"),
                        format!("must be text, a number or true/false, not {other}"),
                    ));
                }
            };
            values.push((name, value));
        }
        let settings =
            Settings::from_entry(engine.settings(), engine.remote(), &key, base, values)?;
        let config = engine.configure(&settings)?;
        warn_about(&settings);
        Ok(config)
    }

    /// The backend of a config file that configures none: the default
    /// engine with no settings, labelled by its name.
    ///
    /// # Errors
    /// The registry is empty, or the default engine needs settings.
    pub fn implicit_backend(
        &self,
        base: &Path,
    ) -> Result<(String, Arc<dyn EngineConfig>), Mistake> {
        let engine = self
            .default_engine()
            .map_err(|why| ("backends".to_owned(), why.to_string()))?;
        let label = engine.name().to_owned();
        let key = format!("backends.{label}");
        let settings =
            Settings::from_entry(engine.settings(), engine.remote(), &key, base, Vec::new())?;
        Ok((label, engine.configure(&settings)?))
    }
}
