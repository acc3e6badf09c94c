//! A config file's `[backends.LABEL]` entry with `kind = "zookeeper"`.

use std::path::PathBuf;

use serde::Deserialize;

use super::super::{Dialect, ZooKeeperConfig};
use wardlock_backend::registry::{Entry, Mistake, RemoteKeys};

/// The ZooKeeper engine's own keys (the shared ones are [`RemoteKeys`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ZooKeeperEntry {
    hosts: String,
    dialect: Option<String>,
    /// Deprecated: the secret in the file itself (a warning says so).
    digest: Option<String>,
    /// A file holding `user:password` (relative to the config file).
    digest_file: Option<PathBuf>,
    sessions: Option<usize>,
    /// SASL DIGEST-MD5 user, and a file holding its password.
    sasl_user: Option<String>,
    sasl_password_file: Option<PathBuf>,
}

/// The configuration `entry` describes.
///
/// # Errors
/// The key at fault and what is wrong.
pub(super) fn config(mut entry: Entry<'_>) -> Result<ZooKeeperConfig, Mistake> {
    let shared: RemoteKeys = entry.remote_keys()?;
    let fields: ZooKeeperEntry = entry.parse()?;
    let sasl = entry.user(
        ("sasl_user", fields.sasl_user),
        ("sasl_password_file", fields.sasl_password_file),
    )?;
    let mut config = ZooKeeperConfig::new(fields.hosts)
        .tls(entry.remote_tls(&shared)?)
        .sasl(sasl);
    config.local_handoff = entry.handoff(&shared);
    if let Some(sessions) = fields.sessions {
        config = config.sessions(sessions);
    }
    if let Some(timeout) = entry.session_timeout(&shared)? {
        config = config.session_timeout(timeout);
    }
    if let Some(name) = fields.dialect {
        let dialect =
            Dialect::parse(&name).map_err(|why| (entry.field("dialect"), why.to_string()))?;
        config = config.dialect(dialect);
    }
    if let Some(root) = shared.root {
        config = config.root(root);
    }
    if fields.digest.is_some() && fields.digest_file.is_some() {
        return Err((
            entry.field("digest_file"),
            "give digest_file or digest, not both".to_owned(),
        ));
    }
    if let Some(digest) = fields.digest {
        tracing::warn!(
            "{key}.digest keeps the password in the config file itself; use {key}.digest_file",
            key = entry.key()
        );
        config = config.digest_auth(digest);
    }
    if let Some(file) = fields.digest_file {
        config.digest_auth = Some(entry.secret("digest_file", &file)?);
    }
    config
        .validate()
        .map_err(|why| entry.mistake(why.to_string()))?;
    Ok(config)
}
