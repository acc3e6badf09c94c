//! A config file's `[backends.LABEL]` entry as an engine reads it: typed by the
//! engine's own serde struct, every mistake one `(key, what is wrong)` pair,
//! paths relative to the config file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::handoff::LocalHandoff;
use crate::secret::Secret;
use crate::tls::{Credentials, TlsFiles};

/// A mistake in a config file: the key at fault (`backends.zk.dialect`) and
/// what is wrong with it.
pub type Mistake = (String, String);

/// One `[backends.LABEL]` entry, without its `kind`.
#[derive(Debug)]
pub struct Entry<'a> {
    key: String,
    table: toml::Table,
    base: &'a Path,
}

impl<'a> Entry<'a> {
    /// The entry at `key` (`backends.LABEL`), read from a file in `base`.
    pub fn new(key: String, table: toml::Table, base: &'a Path) -> Self {
        Entry { key, table, base }
    }

    /// The entry's own key (`backends.LABEL`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key of one of its fields (`backends.LABEL.FIELD`).
    pub fn field(&self, field: &str) -> String {
        format!("{}.{field}", self.key)
    }

    /// The entry as the engine's serde struct (give it
    /// `#[serde(deny_unknown_fields)]`, so a typo is a mistake).
    ///
    /// # Errors
    /// A missing, unknown or mistyped field, named by serde.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, Mistake> {
        self.typed(self.table.clone())
    }

    /// `table` as `T`, serde's complaint as a one-line mistake of the entry.
    fn typed<T: DeserializeOwned>(&self, table: toml::Table) -> Result<T, Mistake> {
        toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| self.mistake(e.message().trim().replace('\n', " ")))
    }

    /// A mistake of the whole entry.
    pub fn mistake(&self, why: impl Into<String>) -> Mistake {
        (self.key.clone(), why.into())
    }

    /// `path` relative to the config file.
    pub fn path(&self, path: &Path) -> PathBuf {
        self.base.join(path)
    }

    /// Field `field` in seconds as a duration.
    ///
    /// # Errors
    /// It is not a positive number of seconds.
    pub fn secs(&self, field: &str, secs: f64) -> Result<Duration, Mistake> {
        secs_at(&self.field(field), secs)
    }

    /// A secret read from the file in field `field`.
    ///
    /// # Errors
    /// The file cannot be read or is empty.
    pub fn secret(&self, field: &str, file: &Path) -> Result<Secret, Mistake> {
        Secret::from_file(&self.path(file)).map_err(|why| (self.field(field), why.to_string()))
    }

    /// TLS files from the fields `tls_ca`, `tls_cert`, `tls_key`.
    ///
    /// # Errors
    /// An incomplete set, named.
    pub fn tls(&self, [ca, cert, key]: [Option<PathBuf>; 3]) -> Result<Option<TlsFiles>, Mistake> {
        let [ca, cert, key] = [ca, cert, key].map(|p| p.map(|p| self.path(&p)));
        TlsFiles::from_flags(
            &self.field("tls"),
            ca.as_deref(),
            cert.as_deref(),
            key.as_deref(),
        )
        .map_err(|why| (self.field("tls_ca"), why.to_string()))
    }

    /// A user and the file holding its password, from two fields (`(name,
    /// value)` each): both or neither.
    ///
    /// # Errors
    /// One without the other; the password file cannot be read.
    pub fn user(
        &self,
        (user_key, user): (&str, Option<String>),
        (file_key, file): (&str, Option<PathBuf>),
    ) -> Result<Option<Credentials>, Mistake> {
        let (user_field, file_field) = (self.field(user_key), self.field(file_key));
        match (user, file) {
            (None, None) => Ok(None),
            (Some(_), None) => Err((
                file_field.clone(),
                format!("{user_field} needs {file_field} (a file holding the password)"),
            )),
            (None, Some(_)) => Err((
                user_field,
                format!("{file_field} needs {}", self.field(user_key)),
            )),
            (Some(user), Some(file)) => {
                Credentials::from_file(&user, &self.path(&file), &file_field)
                    .map(Some)
                    .map_err(|why| (file_field, why.to_string()))
            }
        }
    }
}

/// The keys every remote engine's entry shares: the session, the root,
/// host-local hand-off and TLS (files relative to the config file).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteKeys {
    /// Session timeout (ZooKeeper) or lease TTL (etcd), seconds.
    pub session_timeout: Option<f64>,
    /// Where lock names live.
    pub root: Option<String>,
    /// Host-local hand-off (default on).
    pub local_handoff: Option<bool>,
    /// Hand-off limits.
    pub handoff_max: Option<u32>,
    /// Hand-off limits.
    pub handoff_max_ms: Option<u64>,
    /// How long the host keeps its node after the last local release.
    pub linger_ms: Option<u64>,
    /// TLS: the CA (PEM).
    pub tls_ca: Option<PathBuf>,
    /// TLS: a client certificate (PEM).
    pub tls_cert: Option<PathBuf>,
    /// TLS: its key (PEM).
    pub tls_key: Option<PathBuf>,
}

/// The names of [`RemoteKeys`]' fields.
const REMOTE_KEYS: [&str; 9] = [
    "session_timeout",
    "root",
    "local_handoff",
    "handoff_max",
    "handoff_max_ms",
    "linger_ms",
    "tls_ca",
    "tls_cert",
    "tls_key",
];

impl Entry<'_> {
    /// Takes the keys every remote engine shares out of the entry (so
    /// [`Entry::parse`] sees only the engine's own) and reads them.
    ///
    /// # Errors
    /// One of them has the wrong type.
    pub fn remote_keys(&mut self) -> Result<RemoteKeys, Mistake> {
        let mut shared = toml::Table::new();
        for key in REMOTE_KEYS {
            if let Some(value) = self.table.remove(key) {
                shared.insert(key.to_owned(), value);
            }
        }
        self.typed(shared)
    }

    /// The hand-off limits of `keys`: `None` when `local_handoff = false`.
    pub fn handoff(&self, keys: &RemoteKeys) -> Option<LocalHandoff> {
        keys.local_handoff
            .unwrap_or(true)
            .then(|| handoff_limits(keys.handoff_max, keys.handoff_max_ms, keys.linger_ms))
    }

    /// The TLS files of `keys`.
    ///
    /// # Errors
    /// As [`Entry::tls`].
    pub fn remote_tls(&self, keys: &RemoteKeys) -> Result<Option<TlsFiles>, Mistake> {
        self.tls([
            keys.tls_ca.clone(),
            keys.tls_cert.clone(),
            keys.tls_key.clone(),
        ])
    }

    /// `session_timeout` of `keys` as a duration, if given.
    ///
    /// # Errors
    /// It is not a positive number of seconds.
    pub fn session_timeout(&self, keys: &RemoteKeys) -> Result<Option<Duration>, Mistake> {
        keys.session_timeout
            .map(|secs| self.secs("session_timeout", secs))
            .transpose()
    }
}

/// Hand-off limits from an entry's optional `handoff_max`, `handoff_max_ms`
/// and `linger_ms`, defaults for the rest.
fn handoff_limits(max: Option<u32>, max_ms: Option<u64>, linger_ms: Option<u64>) -> LocalHandoff {
    let default = LocalHandoff::default();
    LocalHandoff {
        max_handoffs: max.unwrap_or(default.max_handoffs),
        max_time: max_ms.map_or(default.max_time, Duration::from_millis),
        linger: linger_ms.map_or(default.linger, Duration::from_millis),
    }
}

/// `secs` at config key `key` as a duration.
///
/// # Errors
/// It is not a positive number of seconds, named by `key`.
pub fn secs_at(key: &str, secs: f64) -> Result<Duration, Mistake> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err((
            key.to_owned(),
            format!("must be a positive number of seconds, got {secs}"),
        ))
    }
}
