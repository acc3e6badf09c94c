//! A config file's `[backends.LABEL]` entry with `kind = "etcd"`.

use std::path::PathBuf;

use serde::Deserialize;

use super::super::EtcdConfig;
use wardlock_backend::handoff::LocalHandoff;
use wardlock_backend::registry::{Entry, Mistake, RemoteKeys};

/// The etcd engine's own keys (the shared ones are [`RemoteKeys`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EtcdEntry {
    /// `HOST:PORT[,HOST:PORT...]`.
    endpoints: String,
    /// An etcd user, and a file holding its password.
    user: Option<String>,
    password_file: Option<PathBuf>,
}

/// The configuration `entry` describes. With `local_handoff = false` the
/// host's key goes after every local holder.
///
/// # Errors
/// The key at fault and what is wrong.
pub(super) fn config(mut entry: Entry<'_>) -> Result<EtcdConfig, Mistake> {
    let shared: RemoteKeys = entry.remote_keys()?;
    let fields: EtcdEntry = entry.parse()?;
    let credentials = entry.user(
        ("user", fields.user),
        ("password_file", fields.password_file),
    )?;
    let mut config = EtcdConfig::new(&fields.endpoints)
        .tls(entry.remote_tls(&shared)?)
        .credentials(credentials)
        .local_handoff(entry.handoff(&shared).unwrap_or(LocalHandoff::NONE));
    if let Some(ttl) = entry.session_timeout(&shared)? {
        config = config.lease_ttl(ttl);
    }
    if let Some(root) = shared.root {
        config = config.root(root);
    }
    config
        .validate()
        .map_err(|why| entry.mistake(why.to_string()))?;
    Ok(config)
}
