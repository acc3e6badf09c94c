//! The values given for an engine's settings, however they were given: from a
//! command line's flags or a config file's entry. Every mistake names the
//! setting the way the user wrote it (`--zk-sessions`, `backends.zk.sessions`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::setting::{REMOTE_SETTINGS, Setting, SettingKind, TLS_KEYS};
use crate::handoff::LocalHandoff;
use crate::secret::Secret;
use crate::tls::{Credentials, TlsFiles};

/// A mistake in the settings: the setting at fault, named as the user gave it
/// (`--zk-sessions`, `backends.zk.sessions`), and what is wrong with it.
pub type Mistake = (String, String);

/// One value as given: text from a command line, typed from a config file.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text (every flag value).
    Text(String),
    /// A whole number (a config file's integer).
    Integer(i64),
    /// A number with a fraction (a config file's float).
    Float(f64),
    /// On or off (a switch flag, a config file's boolean).
    Bool(bool),
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Value::Text(text.to_owned())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Value::Text(text)
    }
}

impl From<bool> for Value {
    fn from(on: bool) -> Self {
        Value::Bool(on)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Integer(n)
    }
}

/// Where the values came from, which decides how a setting is named.
#[derive(Debug, Clone)]
enum Source {
    /// A command line: `--flag`.
    Flags,
    /// A config file's entry `key` (`backends.LABEL`) in a file in `base`.
    Entry { key: String, base: PathBuf },
}

/// The values given for an engine's settings (and the [`REMOTE_SETTINGS`]).
#[derive(Debug, Clone)]
pub struct Settings {
    described: Vec<Setting>,
    values: BTreeMap<&'static str, Value>,
    source: Source,
}

impl Settings {
    /// Values given on a command line for `settings` (keyed by
    /// [`Setting::key`]); every value of [`REMOTE_SETTINGS`] may be given too.
    /// Values of keys that are described nowhere are dropped.
    pub fn from_flags(
        settings: &[Setting],
        values: impl IntoIterator<Item = (&'static str, Value)>,
    ) -> Self {
        Settings::new(settings, values, Source::Flags)
    }

    /// The values of a config file's entry `key` (`backends.LABEL`), read from
    /// a file in directory `base` (relative paths are relative to it).
    ///
    /// # Errors
    /// A key that is none of `settings` (nor of [`REMOTE_SETTINGS`] when
    /// `remote`), named.
    pub fn from_entry(
        settings: &[Setting],
        remote: bool,
        key: &str,
        base: &Path,
        values: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<Self, Mistake> {
        let described = described(settings, remote);
        let mut known = BTreeMap::new();
        for (name, value) in values {
            let Some(setting) = described.iter().find(|s| s.key == name) else {
                let keys: Vec<&str> = described.iter().map(|s| s.key).collect();
                return Err((
                    format!("{key}.{name}"),
                    if keys.is_empty() {
                        "unknown key: this engine takes no keys but `kind`".to_owned()
                    } else {
                        format!("unknown key (known: {})", keys.join(", "))
                    },
                ));
            };
            known.insert(setting.key, value);
        }
        let source = Source::Entry {
            key: key.to_owned(),
            base: base.to_owned(),
        };
        Ok(Settings::new(settings, known, source))
    }

    fn new(
        settings: &[Setting],
        values: impl IntoIterator<Item = (&'static str, Value)>,
        source: Source,
    ) -> Self {
        let described = described(settings, true);
        let values = values
            .into_iter()
            .filter(|(key, _)| described.iter().any(|s| s.key == *key))
            .collect();
        Settings {
            described,
            values,
            source,
        }
    }

    /// The setting `key` as the user names it: `--flag` on a command line,
    /// `backends.LABEL.key` in a config file.
    pub fn name(&self, key: &str) -> String {
        match &self.source {
            Source::Flags => match self.setting(key) {
                Some(setting) => format!("--{}", setting.flag),
                None => format!("--{}", key.replace('_', "-")),
            },
            Source::Entry { key: entry, .. } => format!("{entry}.{key}"),
        }
    }

    /// A mistake of setting `key`.
    pub fn mistake(&self, key: &str, why: impl Into<String>) -> Mistake {
        (self.name(key), why.into())
    }

    /// Whether a value was given for `key` (defaults do not count).
    pub fn given(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    /// The text of `key`, its default when none was given.
    ///
    /// # Errors
    /// A value that is not text.
    pub fn text(&self, key: &str) -> Result<Option<String>, Mistake> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Text(text)) => Ok(Some(text)),
            Some(other) => Err(self.mistake(key, format!("must be text, not {other:?}"))),
        }
    }

    /// The text of `key`, which the engine cannot do without.
    ///
    /// # Errors
    /// None was given (the mistake names the setting and its placeholder),
    /// or it is not text.
    pub fn required(&self, key: &str) -> Result<String, Mistake> {
        self.text(key)?.ok_or_else(|| {
            let placeholder = self.setting(key).map_or("VALUE", |s| s.value_name);
            self.mistake(
                key,
                format!("missing: give {} {placeholder}", self.name(key)),
            )
        })
    }

    /// The path of `key` (relative to the config file, if it came from one).
    ///
    /// # Errors
    /// A value that is not text.
    pub fn path(&self, key: &str) -> Result<Option<PathBuf>, Mistake> {
        let Some(text) = self.text(key)? else {
            return Ok(None);
        };
        Ok(Some(match &self.source {
            Source::Flags => PathBuf::from(text),
            Source::Entry { base, .. } => base.join(text),
        }))
    }

    /// The whole number of `key`.
    ///
    /// # Errors
    /// Not a whole number, or out of `T`'s range.
    pub fn integer<T: TryFrom<i64>>(&self, key: &str) -> Result<Option<T>, Mistake> {
        let number = match self.value(key) {
            None => return Ok(None),
            Some(Value::Integer(n)) => n,
            Some(Value::Text(text)) => text
                .trim()
                .parse::<i64>()
                .map_err(|_| self.mistake(key, format!("must be a whole number, not {text:?}")))?,
            Some(other) => {
                return Err(self.mistake(key, format!("must be a whole number, not {other:?}")));
            }
        };
        T::try_from(number)
            .map(Some)
            .map_err(|_| self.mistake(key, format!("{number} is out of range")))
    }

    /// The duration of `key`, given in seconds.
    ///
    /// # Errors
    /// Not a positive, finite number of seconds.
    pub fn seconds(&self, key: &str) -> Result<Option<Duration>, Mistake> {
        let secs = match self.value(key) {
            None => return Ok(None),
            Some(Value::Integer(n)) => n as f64,
            Some(Value::Float(x)) => x,
            Some(Value::Text(text)) => text.trim().parse::<f64>().map_err(|_| {
                self.mistake(key, format!("must be a number of seconds, not {text:?}"))
            })?,
            Some(Value::Bool(b)) => {
                return Err(self.mistake(key, format!("must be a number of seconds, not {b}")));
            }
        };
        if secs.is_finite() && secs > 0.0 {
            Ok(Some(Duration::from_secs_f64(secs)))
        } else {
            Err(self.mistake(
                key,
                format!("must be a positive number of seconds, got {secs}"),
            ))
        }
    }

    /// Whether switch `key` is on (its default when not given; off without
    /// one).
    ///
    /// # Errors
    /// Not `true` or `false`.
    pub fn switch(&self, key: &str) -> Result<bool, Mistake> {
        match self.value(key) {
            None => Ok(false),
            Some(Value::Bool(on)) => Ok(on),
            Some(Value::Text(text)) => match text.as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(self.mistake(key, format!("must be true or false, not {text:?}"))),
            },
            Some(other) => Err(self.mistake(key, format!("must be true or false, not {other:?}"))),
        }
    }

    /// The secret in the file that setting `key` names, if given.
    ///
    /// # Errors
    /// The file cannot be read or is empty.
    pub fn secret_file(&self, key: &str) -> Result<Option<Secret>, Mistake> {
        let Some(file) = self.path(key)? else {
            return Ok(None);
        };
        Secret::from_file(&file)
            .map(Some)
            .map_err(|why| self.mistake(key, why.to_string()))
    }

    /// TLS files from the settings `tls_ca`, `tls_cert`, `tls_key`.
    ///
    /// # Errors
    /// An incomplete set, named.
    pub fn tls(&self) -> Result<Option<TlsFiles>, Mistake> {
        let [ca, cert, key] = TLS_KEYS;
        let label = match &self.source {
            Source::Flags => self.name(ca).trim_end_matches("-ca").to_owned(),
            Source::Entry { key: entry, .. } => format!("{entry}.tls"),
        };
        TlsFiles::from_flags(
            &label,
            self.path(ca)?.as_deref(),
            self.path(cert)?.as_deref(),
            self.path(key)?.as_deref(),
        )
        .map_err(|why| self.mistake(ca, why.to_string()))
    }

    /// A user and the file holding its password, from settings `user_key` and
    /// `file_key`: both or neither.
    ///
    /// # Errors
    /// One without the other; the password file cannot be read.
    pub fn user(&self, user_key: &str, file_key: &str) -> Result<Option<Credentials>, Mistake> {
        match (self.text(user_key)?, self.path(file_key)?) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(self.mistake(
                file_key,
                format!(
                    "{} needs {} (a file holding the password)",
                    self.name(user_key),
                    self.name(file_key)
                ),
            )),
            (None, Some(_)) => Err(self.mistake(
                user_key,
                format!("{} needs {}", self.name(file_key), self.name(user_key)),
            )),
            (Some(user), Some(file)) => Credentials::from_file(&user, &file, &self.name(file_key))
                .map(Some)
                .map_err(|why| self.mistake(file_key, why.to_string())),
        }
    }

    /// Where lock names live ([`REMOTE_SETTINGS`]' `root`).
    ///
    /// # Errors
    /// Not text.
    pub fn root(&self) -> Result<String, Mistake> {
        Ok(self.text("root")?.unwrap_or_default())
    }

    /// How long a session lasts ([`REMOTE_SETTINGS`]' `session_timeout`).
    ///
    /// # Errors
    /// Not a positive number of seconds.
    pub fn session_timeout(&self) -> Result<Duration, Mistake> {
        Ok(self.seconds("session_timeout")?.unwrap_or(Duration::ZERO))
    }

    /// The hand-off limits ([`REMOTE_SETTINGS`]): `None` when
    /// `local_handoff` is off. Lock caching is on ([`LocalHandoff::cached`])
    /// unless `lock_cache` is off (or `linger_ms` is 0).
    ///
    /// # Errors
    /// A limit that is not a whole number.
    pub fn handoff(&self) -> Result<Option<LocalHandoff>, Mistake> {
        if !self.switch("local_handoff")? {
            return Ok(None);
        }
        let default = LocalHandoff::cached();
        let linger = if self.switch("lock_cache")? {
            self.integer("linger_ms")?
                .map_or(default.linger, Duration::from_millis)
        } else {
            Duration::ZERO
        };
        Ok(Some(LocalHandoff {
            max_handoffs: self.integer("handoff_max")?.unwrap_or(default.max_handoffs),
            max_time: self
                .integer("handoff_max_ms")?
                .map_or(default.max_time, Duration::from_millis),
            linger,
        }))
    }

    /// One warning for each discouraged setting that was given, naming it
    /// as given (`--zk-digest: keeps the password where others read it…`).
    pub fn warnings(&self) -> Vec<String> {
        self.described
            .iter()
            .filter(|s| self.given(s.key))
            .filter_map(|s| {
                s.discouraged
                    .map(|why| format!("{}: {why}", self.name(s.key)))
            })
            .collect()
    }

    fn setting(&self, key: &str) -> Option<&Setting> {
        self.described.iter().find(|s| s.key == key)
    }

    /// The value given for `key`, else its default (parsed by kind).
    fn value(&self, key: &str) -> Option<Value> {
        if let Some(value) = self.values.get(key) {
            return Some(value.clone());
        }
        let setting = self.setting(key)?;
        let default = setting.default?;
        Some(match setting.kind {
            SettingKind::Switch => Value::Bool(default == "true"),
            _ => Value::Text(default.to_owned()),
        })
    }
}

/// `settings`, and the remote ones when `remote`.
fn described(settings: &[Setting], remote: bool) -> Vec<Setting> {
    let remote = if remote { REMOTE_SETTINGS } else { &[] };
    settings.iter().chain(remote).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZK: &[Setting] = &[
        Setting::new("hosts", "zookeeper", SettingKind::Text)
            .value_name("HOST:PORT")
            .chooses(),
        Setting::new("sessions", "zk-sessions", SettingKind::Integer).default("1"),
        Setting::new("tls_ca", "zk-tls-ca", SettingKind::Path),
        Setting::new("tls_cert", "zk-tls-cert", SettingKind::Path),
        Setting::new("tls_key", "zk-tls-key", SettingKind::Path),
    ];

    fn entry(values: &[(&str, Value)]) -> Result<Settings, Mistake> {
        let values = values.iter().map(|(k, v)| ((*k).to_owned(), v.clone()));
        Settings::from_entry(ZK, true, "backends.zk", Path::new("/etc/w"), values)
    }

    #[test]
    fn mistakes_name_the_setting_as_the_user_gave_it() {
        let flags = Settings::from_flags(ZK, [("sessions", Value::Text("many".into()))]);
        let (at, why) = flags
            .integer::<usize>("sessions")
            .expect_err("not a number");
        assert_eq!(at, "--zk-sessions");
        assert!(why.contains("\"many\""), "{why}");
        let file = entry(&[("sessions", Value::Bool(true))]).expect("known key");
        let (at, _) = file.integer::<usize>("sessions").expect_err("not a number");
        assert_eq!(at, "backends.zk.sessions");
    }

    #[test]
    fn unknown_keys_are_refused_and_defaults_fill_the_rest() {
        let (at, why) = entry(&[("sesions", Value::Integer(2))]).expect_err("a typo");
        assert_eq!(at, "backends.zk.sesions");
        assert!(why.contains("sessions"), "lists the known keys: {why}");
        let given = entry(&[("hosts", Value::Text("h:1".into()))]).expect("known");
        assert_eq!(given.integer::<usize>("sessions"), Ok(Some(1)));
        assert_eq!(given.root(), Ok("/wardlock".to_owned()));
        assert_eq!(given.session_timeout(), Ok(Duration::from_secs(10)));
        assert_eq!(given.handoff(), Ok(Some(LocalHandoff::cached())));
        let uncached = entry(&[
            ("hosts", Value::Text("h:1".into())),
            ("lock_cache", Value::Bool(false)),
        ])
        .expect("known");
        assert_eq!(uncached.handoff(), Ok(Some(LocalHandoff::default())));
        let (at, why) = Settings::from_flags(ZK, [])
            .required("hosts")
            .expect_err("missing");
        assert_eq!(at, "--zookeeper");
        assert!(why.contains("HOST:PORT"), "{why}");
    }

    #[test]
    fn paths_in_a_file_are_relative_to_it_and_tls_comes_whole() {
        let file = entry(&[("tls_cert", Value::Text("c.pem".into()))]).expect("known");
        assert_eq!(
            file.path("tls_cert"),
            Ok(Some(PathBuf::from("/etc/w/c.pem")))
        );
        let (at, why) = file.tls().expect_err("a certificate without a CA");
        assert_eq!(at, "backends.zk.tls_ca");
        assert!(why.contains("backends.zk.tls"), "{why}");
        let off = entry(&[("local_handoff", Value::Bool(false))]).expect("known");
        assert_eq!(off.handoff(), Ok(None));
        let (_, why) = entry(&[("session_timeout", Value::Integer(0))])
            .expect("known")
            .session_timeout()
            .expect_err("zero");
        assert!(why.contains("positive"), "{why}");
    }
}
