//! A config file's `[backends.LABEL]` entry with `kind = "etcd"`.

use std::path::PathBuf;

use serde::Deserialize;

use super::super::EtcdConfig;
use crate::backend::handoff::LocalHandoff;
use crate::registry::{Entry, Mistake, handoff_limits};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EtcdEntry {
    /// `HOST:PORT[,HOST:PORT...]`.
    endpoints: String,
    /// The host lease's TTL, seconds.
    session_timeout: Option<f64>,
    root: Option<String>,
    /// Local hand-off while another host waits (default on; off: the
    /// host's key goes after every local holder).
    local_handoff: Option<bool>,
    handoff_max: Option<u32>,
    handoff_max_ms: Option<u64>,
    linger_ms: Option<u64>,
    /// TLS files (PEM, relative to the config file).
    tls_ca: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    /// An etcd user, and a file holding its password.
    user: Option<String>,
    password_file: Option<PathBuf>,
}

/// The configuration `entry` describes.
///
/// # Errors
/// The key at fault and what is wrong.
pub(super) fn config(entry: &Entry<'_>) -> Result<EtcdConfig, Mistake> {
    let fields: EtcdEntry = entry.parse()?;
    let tls = entry.tls([fields.tls_ca, fields.tls_cert, fields.tls_key])?;
    let credentials = entry.user(
        ("user", fields.user),
        ("password_file", fields.password_file),
    )?;
    let handoff = if fields.local_handoff.unwrap_or(true) {
        handoff_limits(fields.handoff_max, fields.handoff_max_ms, fields.linger_ms)
    } else {
        LocalHandoff::NONE
    };
    let mut config = EtcdConfig::new(&fields.endpoints)
        .tls(tls)
        .credentials(credentials)
        .local_handoff(handoff);
    if let Some(secs) = fields.session_timeout {
        config = config.lease_ttl(entry.secs("session_timeout", secs)?);
    }
    if let Some(root) = fields.root {
        config = config.root(root);
    }
    config
        .validate()
        .map_err(|why| entry.mistake(why.to_string()))?;
    Ok(config)
}
