//! The ZooKeeper engine's own settings: each a flag of `run`, `serve` and
//! `status` and a key of a config file's `kind = "zookeeper"` entry.

use wardlock_backend::registry::{Mistake, Setting, SettingKind, Settings};

use crate::{AUTO_SESSIONS, Dialect, ZooKeeperConfig};

/// The ZooKeeper engine's settings (the shared remote ones come on top).
pub(super) const SETTINGS: &[Setting] = &[
    Setting::new("hosts", "zookeeper", SettingKind::Text)
        .value_name("HOST:PORT[,...]")
        .chooses()
        .help("ZooKeeper ensemble, HOST:PORT[,HOST:PORT...]: chooses the zookeeper engine."),
    Setting::new("sessions", "zk-sessions", SettingKind::Text)
        .value_name("N|auto")
        .default("auto")
        .help("ZooKeeper sessions this host spreads its locks over (by lock name), so one session's strict request order does not serialise unrelated locks: N (1 to 64) opened at start, or auto (up to 8, each opened when a lock name of it is first used)."),
    Setting::new("dialect", "dialect", SettingKind::Text)
        .value_name("NAME")
        .default("curator-rw")
        .help("Node naming dialect on ZooKeeper, to share locks with other clients: curator-rw (Curator InterProcessReadWriteLock), curator-mutex (Curator InterProcessMutex; exclusive only) or kazoo (Lock/WriteLock/ReadLock)."),
    Setting::new("digest", "zk-digest", SettingKind::Text)
        .value_name("USER:PASSWORD")
        .discouraged("keeps the password where others read it (`ps` shows a command line to every user; a config file is copied around); use a digest file instead")
        .help("Digest credentials USER:PASSWORD given in place: deprecated, prefer --zk-digest-file (a warning says so)."),
    Setting::new("digest_file", "zk-digest-file", SettingKind::Path)
        .value_name("FILE")
        .help("A file holding the digest credentials USER:PASSWORD (one line); wardlock's nodes then get the creator-only ACL so other ZooKeeper users cannot delete them. The credentials never appear in logs, errors or status output."),
    Setting::new("tls_ca", "zk-tls-ca", SettingKind::Path)
        .value_name("FILE")
        .help("Reach ZooKeeper over TLS (its secureClientPort), trusting the server certificates this CA file (PEM) signed."),
    Setting::new("tls_cert", "zk-tls-cert", SettingKind::Path)
        .value_name("FILE")
        .help("A client certificate (PEM) for mutual TLS, with --zk-tls-key."),
    Setting::new("tls_key", "zk-tls-key", SettingKind::Path)
        .value_name("FILE")
        .help("The client certificate's private key (PEM)."),
    Setting::new("sasl_user", "zk-sasl-user", SettingKind::Text)
        .value_name("USER")
        .help("Log in with SASL DIGEST-MD5 as this user (a user of the server's JAAS `Server` section), with --zk-sasl-password-file."),
    Setting::new("sasl_password_file", "zk-sasl-password-file", SettingKind::Path)
        .value_name("FILE")
        .help("A file holding the SASL user's password (one line)."),
];

/// The configuration `settings` describe.
///
/// # Errors
/// The setting at fault and what is wrong.
pub(super) fn config(settings: &Settings) -> Result<ZooKeeperConfig, Mistake> {
    let mut config = ZooKeeperConfig::new(settings.required("hosts")?)
        .root(settings.root()?)
        .session_timeout(settings.session_timeout()?)
        .tls(settings.tls()?)
        .sasl(settings.user("sasl_user", "sasl_password_file")?);
    config.local_handoff = settings.handoff()?;
    config = match settings.text("sessions") {
        Ok(None) => config.sessions_on_demand(AUTO_SESSIONS),
        Ok(Some(text)) if text.trim() == "auto" => config.sessions_on_demand(AUTO_SESSIONS),
        Ok(Some(text)) => match text.trim().parse() {
            Ok(sessions) => config.sessions(sessions),
            Err(_) => {
                return Err(settings.mistake(
                    "sessions",
                    format!("must be a number of sessions (1 to 64) or auto, not {text:?}"),
                ));
            }
        },
        // A number written as one (a config file's `sessions = 4`).
        Err(_) => match settings.integer("sessions")? {
            Some(sessions) => config.sessions(sessions),
            None => config.sessions_on_demand(AUTO_SESSIONS),
        },
    };
    if let Some(name) = settings.text("dialect")? {
        let dialect =
            Dialect::parse(&name).map_err(|why| settings.mistake("dialect", why.to_string()))?;
        config = config.dialect(dialect);
    }
    if settings.given("digest") && settings.given("digest_file") {
        return Err(settings.mistake(
            "digest_file",
            format!(
                "give {} or {}, not both",
                settings.name("digest_file"),
                settings.name("digest")
            ),
        ));
    }
    if let Some(digest) = settings.text("digest")? {
        config = config.digest_auth(digest);
    }
    if let Some(digest) = settings.secret_file("digest_file")? {
        config.digest_auth = Some(digest);
    }
    config
        .validate()
        .map_err(|why| settings.mistake("hosts", why.to_string()))?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use wardlock_backend::registry::Value;

    use super::*;

    fn flags(sessions: Option<&str>) -> Result<ZooKeeperConfig, Mistake> {
        let mut values = vec![("hosts", Value::Text("127.0.0.1:2181".into()))];
        if let Some(sessions) = sessions {
            values.push(("sessions", Value::Text(sessions.into())));
        }
        config(&Settings::from_flags(SETTINGS, values))
    }

    #[test]
    fn sessions_open_on_demand_unless_a_number_is_given() {
        let default = flags(None).expect("valid");
        assert_eq!((default.sessions, default.on_demand), (AUTO_SESSIONS, true));
        let auto = flags(Some("auto")).expect("valid");
        assert_eq!((auto.sessions, auto.on_demand), (AUTO_SESSIONS, true));
        let four = flags(Some("4")).expect("valid");
        assert_eq!((four.sessions, four.on_demand), (4, false));
        let (at, why) = flags(Some("many")).expect_err("neither");
        assert_eq!(at, "--zk-sessions");
        assert!(why.contains("auto") && why.contains("\"many\""), "{why}");
        let file = Settings::from_entry(
            SETTINGS,
            true,
            "backends.zk",
            Path::new("/etc/w"),
            [
                ("hosts".to_owned(), Value::Text("h:1".into())),
                ("sessions".to_owned(), Value::Integer(2)),
            ],
        )
        .expect("known keys");
        let two = config(&file).expect("valid");
        assert_eq!((two.sessions, two.on_demand), (2, false));
    }
}
