//! Where a lock lives in etcd: the layout `etcdctl lock` and Go's
//! `concurrency.Mutex` use, so they and wardlock's guests exclude each other.
//!
//! Lock `NAME` is the key prefix `<root>/<NAME>/`; every contender (one per
//! host, under the host's lease) is the key `<prefix><lease ID in hex>`; the
//! owner is the key with the smallest create revision. A prefix range also
//! covers longer keys, so a nested name's keys would fall inside its parent's
//! range (`<root>/a/b/…` under `<root>/a/`): the `/` between a name's segments
//! is written `%2F`, and holding `a/b` (prefix `<root>/a%2Fb/`) never delays
//! `a`. The `etcdctl lock` name of lock `a/b` is therefore `<root>/a%2Fb`
//! ([`etcdctl_name`]).
//!
//! Modes: an exclusive contender's value is empty (as etcdctl's); a shared
//! contender's value is [`SHARED_VALUE`]. A key with any other value (etcdctl's,
//! Go's) is exclusive. A reader waits only for earlier exclusive keys; a
//! writer for every earlier key.

use wardlock_backend::Mode;
use wardlock_backend::name::LockName;

/// The value of a shared (read) contender's key.
pub(crate) const SHARED_VALUE: &[u8] = b"wardlock:shared";

/// The key prefix of lock `name` under `root`: `<root>/<name with / as %2F>/`.
pub(crate) fn prefix(root: &str, name: &LockName) -> String {
    format!("{root}/{}/", encoded(name))
}

/// The key prefix of `name` in one of wardlock's own rooms (`sem`,
/// `revoke`): `<root>/%<room>/<name with / as %2F>/`. `%` never occurs in a
/// lock name, so no lock's prefix covers a room.
pub(crate) fn room_prefix(root: &str, room: &str, name: &LockName) -> String {
    format!("{root}/%{room}/{}/", encoded(name))
}

/// `name` with every `/` written `%2F`, so nested names get disjoint prefixes.
fn encoded(name: &LockName) -> String {
    name.as_str().replace('/', "%2F")
}

/// The name to give `etcdctl lock` for lock `name` under `root`.
pub fn etcdctl_name(root: &str, name: &LockName) -> String {
    let prefix = prefix(root, name);
    prefix.trim_end_matches('/').to_owned()
}

/// The key of this host's contender for the lock at `prefix`.
pub(crate) fn contender_key(prefix: &str, lease: i64) -> String {
    format!("{prefix}{lease:x}")
}

/// The value a contender in `mode` puts.
pub(crate) fn value_of(mode: Mode) -> &'static [u8] {
    match mode {
        Mode::Exclusive => b"",
        Mode::Shared => SHARED_VALUE,
    }
}

/// The mode of a contender whose key holds `value`.
pub(crate) fn mode_of(value: &[u8]) -> Mode {
    if value == SHARED_VALUE {
        Mode::Shared
    } else {
        Mode::Exclusive
    }
}

/// Whether a contender in `mine` must wait for an earlier one in `earlier`.
pub(crate) fn conflicts(mine: Mode, earlier: Mode) -> bool {
    mine == Mode::Exclusive || earlier == Mode::Exclusive
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> LockName {
        LockName::new(text).expect("valid")
    }

    #[test]
    fn nested_names_get_disjoint_prefixes() {
        let parent = prefix("/wardlock", &name("a"));
        let child = prefix("/wardlock", &name("a/b"));
        assert_eq!(parent, "/wardlock/a/");
        assert_eq!(child, "/wardlock/a%2Fb/");
        assert!(!child.starts_with(&parent), "a's range must not cover a/b");
        assert_eq!(etcdctl_name("/wardlock", &name("a/b")), "/wardlock/a%2Fb");
        assert_eq!(contender_key(&parent, 0x694d_a20d), "/wardlock/a/694da20d");
    }

    #[test]
    fn modes_round_trip_and_foreign_keys_are_exclusive() {
        for mode in [Mode::Exclusive, Mode::Shared] {
            assert_eq!(mode_of(value_of(mode)), mode);
        }
        assert_eq!(mode_of(b"anything"), Mode::Exclusive);
        assert!(!conflicts(Mode::Shared, Mode::Shared));
        assert!(conflicts(Mode::Shared, Mode::Exclusive));
        assert!(conflicts(Mode::Exclusive, Mode::Shared));
    }
}
