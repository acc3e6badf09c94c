//! The Valkey/Redis engine's own settings: each a flag of `run`, `serve`
//! and `status` and a key of a config file's `kind = "redis"` entry.

use wardlock_backend::registry::{Mistake, Setting, SettingKind, Settings};

use crate::ValkeyConfig;

/// The engine's settings (the shared remote ones come on top).
pub(super) const SETTINGS: &[Setting] = &[
    Setting::new("url", "redis", SettingKind::Text)
        .value_name("URL")
        .chooses()
        .help("Valkey or Redis URL, redis://[USER@]HOST:PORT[/DB] (rediss:// for TLS): chooses the Valkey/Redis engine. Lock NAME holds the key ROOT/NAME while granted (what redis-py's Lock('ROOT/NAME') takes); the server must use maxmemory-policy noeviction and persist its data, or it is refused. The password comes from --redis-password-file, never the URL."),
    Setting::new("password_file", "redis-password-file", SettingKind::Path)
        .value_name("FILE")
        .help("A file holding the password of the URL's user (or of the default user), one line."),
    Setting::new("tls_ca", "redis-tls-ca", SettingKind::Path)
        .value_name("FILE")
        .help("With a rediss:// URL: trust the server certificates this CA file (PEM) signed, instead of the system's CA certificates."),
    Setting::new("tls_cert", "redis-tls-cert", SettingKind::Path)
        .value_name("FILE")
        .help("A client certificate (PEM), for servers that ask for one (tls-auth-clients yes); with --redis-tls-key."),
    Setting::new("tls_key", "redis-tls-key", SettingKind::Path)
        .value_name("FILE")
        .help("The client certificate's private key (PEM)."),
    Setting::new("sentinel", "redis-sentinel", SettingKind::Text)
        .value_name("HOST:PORT,…")
        .help("Find the primary through these Sentinels (with --redis-sentinel-master): the host connects to the primary a majority of them names, and counts a session renewal only while a majority still names it. The --redis URL then gives the scheme, user and database; its host and port are not used."),
    Setting::new("sentinel_master", "redis-sentinel-master", SettingKind::Text)
        .value_name("NAME")
        .help("The name the Sentinels monitor the primary under (their `sentinel monitor NAME …`)."),
    Setting::new("accept_unsafe", "redis-accept-unsafe", SettingKind::Switch)
        .help("Run on a server whose settings cannot keep locks safe (an eviction policy that may drop a lock key, no persistence so tokens go backwards after a restart): the host says so at start. Without it such a server is refused."),
];

/// The configuration `settings` describe. Lock caching is off unless
/// `--linger-ms` is given: redis-py waiters are invisible to a host.
///
/// # Errors
/// The setting at fault and what is wrong.
pub(super) fn config(settings: &Settings) -> Result<ValkeyConfig, Mistake> {
    let mut handoff = settings
        .handoff()?
        .unwrap_or(wardlock_backend::handoff::LocalHandoff::NONE);
    if !settings.given("linger_ms") {
        handoff.linger = std::time::Duration::ZERO;
    }
    let mut config = ValkeyConfig::new(settings.required("url")?)
        .session_timeout(settings.session_timeout()?)
        .local_handoff(handoff)
        .password(settings.secret_file("password_file")?)
        .accept_unsafe(settings.switch("accept_unsafe")?)
        .tls(settings.tls()?);
    match (
        settings.text("sentinel")?,
        settings.text("sentinel_master")?,
    ) {
        (None, None) => {}
        (Some(list), Some(master)) => {
            let sentinels = list.split(',').map(|s| s.trim().to_owned()).collect();
            config = config.sentinel(sentinels, master);
        }
        (Some(_), None) => {
            return Err(settings.mistake(
                "sentinel_master",
                "--redis-sentinel needs --redis-sentinel-master NAME (the name the Sentinels monitor the primary under)",
            ));
        }
        (None, Some(_)) => {
            return Err(settings.mistake(
                "sentinel",
                "--redis-sentinel-master needs --redis-sentinel HOST:PORT,… (the Sentinels to ask)",
            ));
        }
    }
    let root = settings.root()?;
    if !root.is_empty() {
        config = config.root(root);
    }
    config.validate().map_err(|why| {
        let key = match why {
            crate::ConfigError::Root(_) => "root",
            crate::ConfigError::TlsWithoutRediss(_) => "tls_ca",
            crate::ConfigError::Sentinel(_) => "sentinel",
            _ => "url",
        };
        settings.mistake(key, why.to_string())
    })?;
    Ok(config)
}
