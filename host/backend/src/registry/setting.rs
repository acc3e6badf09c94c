//! A setting as an engine describes it: plain data that a command line renders
//! as a flag and a config file reads as a key.

/// What values a [`Setting`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// Free text (a host list, a user name, a dialect).
    Text,
    /// A file or directory; relative paths in a config file are relative to
    /// the file.
    Path,
    /// A whole number.
    Integer,
    /// A positive number of seconds (fractions allowed).
    Seconds,
    /// On or off. On a command line the flag takes no value and turns the
    /// setting to the opposite of its default (`--no-local-handoff`).
    Switch,
}

/// One setting of an engine: its config key, its flag, and how to explain it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The key in a config file's `[backends.LABEL]` entry (`sessions`), and
    /// the name the engine reads it by from [`Settings`](super::Settings).
    pub key: &'static str,
    /// The long flag on a command line, without dashes (`zk-sessions`).
    pub flag: &'static str,
    /// What values it takes.
    pub kind: SettingKind,
    /// The placeholder in `--help` (`HOST:PORT[,...]`).
    pub value_name: &'static str,
    /// The help text (first sentence: what it is).
    pub help: &'static str,
    /// The value when none is given, as it would be written
    /// (`"curator-rw"`, `"10"`, `"true"`); [`Settings`](super::Settings)
    /// returns it for an absent setting.
    pub default: Option<&'static str>,
    /// Giving it chooses this engine without `--backend` (`--zookeeper`).
    pub chooses: bool,
    /// Where it holds a secret: allowed, but discouraged (a warning says so,
    /// naming the setting given), because a command line is visible to every
    /// user of the machine.
    pub discouraged: Option<&'static str>,
}

impl Setting {
    /// A setting with config key `key` and flag `--flag`, of kind `kind`, no
    /// help, no default.
    pub const fn new(key: &'static str, flag: &'static str, kind: SettingKind) -> Self {
        Setting {
            key,
            flag,
            kind,
            value_name: "VALUE",
            help: "",
            default: None,
            chooses: false,
            discouraged: None,
        }
    }

    /// With this `--help` placeholder.
    pub const fn value_name(mut self, value_name: &'static str) -> Self {
        self.value_name = value_name;
        self
    }

    /// With this help text.
    pub const fn help(mut self, help: &'static str) -> Self {
        self.help = help;
        self
    }

    /// With this default, as it would be written.
    pub const fn default(mut self, default: &'static str) -> Self {
        self.default = Some(default);
        self
    }

    /// Giving it chooses the engine.
    pub const fn chooses(mut self) -> Self {
        self.chooses = true;
        self
    }

    /// Allowed, but warned about with `why` when given.
    pub const fn discouraged(mut self, why: &'static str) -> Self {
        self.discouraged = Some(why);
        self
    }
}

/// The settings every remote engine shares ([`Engine::remote`](super::Engine::remote)):
/// where names live, how long a session lasts, and host-local hand-off. A
/// command line shows them once, for every engine.
pub const REMOTE_SETTINGS: &[Setting] = &[
    Setting::new("root", "root", SettingKind::Text)
        .value_name("PATH")
        .default("/wardlock")
        .help("Root under which lock names live in the lock service (ZooKeeper: `<root>/<name>`; etcd: the key prefix; the memory engine keeps one namespace per host; PostgreSQL refuses it: its advisory keys, shared with sqlx, have no root)."),
    Setting::new("session_timeout", "session-timeout", SettingKind::Seconds)
        .value_name("SECS")
        .default("10")
        .help("Session timeout in seconds: how long after this host dies its locks stay held (ZooKeeper's session timeout; etcd's lease TTL, whole seconds; PostgreSQL: the server ends a silent host's connections a fifth later)."),
    Setting::new("local_handoff", "no-local-handoff", SettingKind::Switch)
        .default("true")
        .help("No hand-off while another host waits. On ZooKeeper every guest then queues on the lock service on its own, instead of the host queueing once per lock and handing the grant among its guests in memory; on etcd and PostgreSQL (one key or advisory lock per host and lock) the host keeps queueing once but gives its key up after every local holder."),
    Setting::new("handoff_max", "handoff-max", SettingKind::Integer)
        .value_name("N")
        .default("32")
        .help("Local hand-offs still made once a guest of another host queues behind this host's node (the fairness bound)."),
    Setting::new("handoff_max_ms", "handoff-max-ms", SettingKind::Integer)
        .value_name("MS")
        .default("10")
        .help("How long after another host's guest queued local hand-offs may go on."),
    Setting::new("linger_ms", "linger-ms", SettingKind::Integer)
        .value_name("MS")
        .default("5000")
        .help("Lock caching: keep this host's node this long after the last local release, so a re-acquire on this host costs no round trip; another host queueing for the lock ends it at once (0: release at once). At most 1,024 released locks are cached per host. Not on PostgreSQL unless given: it tells a holder nothing when someone queues."),
    Setting::new("lock_cache", "no-lock-cache", SettingKind::Switch)
        .default("true")
        .help("No lock caching: give this host's node up as soon as its last local holder releases (as --linger-ms 0)."),
];

/// The TLS settings' keys (`tls_ca`, `tls_cert`, `tls_key`), which each remote
/// engine declares with flags of its own (`--zk-tls-ca`, …) and reads with
/// [`Settings::tls`](super::Settings::tls).
pub(crate) const TLS_KEYS: [&str; 3] = ["tls_ca", "tls_cert", "tls_key"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::LocalHandoff;

    #[test]
    fn the_hand_off_defaults_are_the_toolkit_s() {
        let default = |key: &str| {
            REMOTE_SETTINGS
                .iter()
                .find(|s| s.key == key)
                .and_then(|s| s.default)
                .map(str::to_owned)
        };
        let limits = LocalHandoff::cached();
        assert_eq!(
            default("handoff_max"),
            Some(limits.max_handoffs.to_string())
        );
        assert_eq!(
            default("handoff_max_ms"),
            Some(limits.max_time.as_millis().to_string())
        );
        assert_eq!(
            default("linger_ms"),
            Some(limits.linger.as_millis().to_string())
        );
    }
}
