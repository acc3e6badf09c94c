//! The etcd engine's own settings: each a flag of `run`, `serve` and `status`
//! and a key of a config file's `kind = "etcd"` entry.

use wardlock_backend::handoff::LocalHandoff;
use wardlock_backend::registry::{Mistake, Setting, SettingKind, Settings};

use crate::EtcdConfig;

/// The etcd engine's settings (the shared remote ones come on top).
pub(super) const SETTINGS: &[Setting] = &[
    Setting::new("endpoints", "etcd", SettingKind::Text)
        .value_name("HOST:PORT[,...]")
        .chooses()
        .help("etcd cluster endpoints, HOST:PORT[,HOST:PORT...]: chooses the etcd engine. Locks are shared with `etcdctl lock <root>/<NAME>` (a `/` inside NAME is written `%2F`); --session-timeout is the host lease's TTL (whole seconds) and --root the key prefix."),
    Setting::new("tls_ca", "etcd-tls-ca", SettingKind::Path)
        .value_name("FILE")
        .help("Reach etcd over TLS (https), trusting the server certificates this CA file (PEM) signed."),
    Setting::new("tls_cert", "etcd-tls-cert", SettingKind::Path)
        .value_name("FILE")
        .help("A client certificate (PEM), for clusters started with --client-cert-auth; with --etcd-tls-key."),
    Setting::new("tls_key", "etcd-tls-key", SettingKind::Path)
        .value_name("FILE")
        .help("The client certificate's private key (PEM)."),
    Setting::new("user", "etcd-user", SettingKind::Text)
        .value_name("USER")
        .help("Authenticate as this etcd user (clusters with `auth enable`), with --etcd-password-file. It needs read and write on the --root prefix."),
    Setting::new("password_file", "etcd-password-file", SettingKind::Path)
        .value_name("FILE")
        .help("A file holding the etcd user's password (one line)."),
];

/// The configuration `settings` describe. With hand-off off the host's key
/// goes after every local holder.
///
/// # Errors
/// The setting at fault and what is wrong.
pub(super) fn config(settings: &Settings) -> Result<EtcdConfig, Mistake> {
    let config = EtcdConfig::new(&settings.required("endpoints")?)
        .root(settings.root()?)
        .lease_ttl(settings.session_timeout()?)
        .local_handoff(settings.handoff()?.unwrap_or(LocalHandoff::NONE))
        .tls(settings.tls()?)
        .credentials(settings.user("user", "password_file")?);
    config
        .validate()
        .map_err(|why| settings.mistake("endpoints", why.to_string()))?;
    Ok(config)
}
