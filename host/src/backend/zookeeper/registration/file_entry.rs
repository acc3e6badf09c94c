//! A config file's `[backends.LABEL]` entry with `kind = "zookeeper"`.

use std::path::PathBuf;

use serde::Deserialize;

use super::super::{Dialect, ZooKeeperConfig};
use crate::registry::{Entry, Mistake, handoff_limits};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ZooKeeperEntry {
    hosts: String,
    session_timeout: Option<f64>,
    dialect: Option<String>,
    root: Option<String>,
    /// Deprecated: the secret in the file itself (a warning says so).
    digest: Option<String>,
    /// A file holding `user:password` (relative to the config file).
    digest_file: Option<PathBuf>,
    sessions: Option<usize>,
    /// Host-local hand-off (default on).
    local_handoff: Option<bool>,
    handoff_max: Option<u32>,
    handoff_max_ms: Option<u64>,
    linger_ms: Option<u64>,
    /// TLS files (PEM, relative to the config file).
    tls_ca: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    /// SASL DIGEST-MD5 user, and a file holding its password.
    sasl_user: Option<String>,
    sasl_password_file: Option<PathBuf>,
}

/// The configuration `entry` describes.
///
/// # Errors
/// The key at fault and what is wrong.
pub(super) fn config(entry: &Entry<'_>) -> Result<ZooKeeperConfig, Mistake> {
    let fields: ZooKeeperEntry = entry.parse()?;
    let tls = entry.tls([fields.tls_ca, fields.tls_cert, fields.tls_key])?;
    let sasl = entry.user(
        ("sasl_user", fields.sasl_user),
        ("sasl_password_file", fields.sasl_password_file),
    )?;
    let mut config = ZooKeeperConfig::new(fields.hosts).tls(tls).sasl(sasl);
    if let Some(sessions) = fields.sessions {
        config = config.sessions(sessions);
    }
    if fields.local_handoff.unwrap_or(true) {
        config = config.local_handoff(handoff_limits(
            fields.handoff_max,
            fields.handoff_max_ms,
            fields.linger_ms,
        ));
    }
    if let Some(secs) = fields.session_timeout {
        config = config.session_timeout(entry.secs("session_timeout", secs)?);
    }
    if let Some(name) = fields.dialect {
        let dialect =
            Dialect::parse(&name).map_err(|why| (entry.field("dialect"), why.to_string()))?;
        config = config.dialect(dialect);
    }
    if let Some(root) = fields.root {
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
