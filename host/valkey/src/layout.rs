//! Where the engine keeps things on the server, under the root (`/wardlock`
//! by default). Every key of a root starts with it; wardlock's own keys
//! carry a `%`, which no lock name contains.
//!
//! | key | type | what |
//! | --- | --- | --- |
//! | `ROOT/NAME` | string | set while wardlock hosts hold lock NAME (`wardlock:MEMBER`, with the session's time-to-live): the key redis-py's `Lock('ROOT/NAME')` takes, so the two exclude each other |
//! | `ROOT/%queue/NAME` | sorted set | NAME's queue: members `TOKEN:MODE:HOST:GEN` (mode `w` writer, `r` reader, `e` candidate of election NAME, `p` permit of semaphore NAME), scored by token, in arrival order |
//! | `ROOT/%value/NAME` | hash | election NAME's candidates' values, semaphore NAME's permit counts: field MEMBER |
//! | `ROOT/%observers/NAME` | set | the sessions (`HOST:GEN`) watching election NAME's leader, with a time-to-live their watches renew |
//! | `ROOT/%session/HOST:GEN` | string | a host's session, with a time-to-live the host renews; queue members whose session key is gone are dead |
//! | `ROOT/%held/HOST:GEN` | set | the `ROOT/NAME` keys a session holds, renewed with it |
//! | `ROOT/%token` | integer | the fencing-token counter |
//! | `ROOT/%data/NAME` | hash | NAME's guarded store: field KEY, value `REVISION|ENTRY` |
//! | `ROOT/%revision` | integer | the guarded store's revision counter |
//! | `ROOT/%kv/BUCKET` | hash | a `wasi:keyvalue` bucket: field KEY, value `VERSION|VALUE` |
//! | `ROOT/%kvversion` | integer | the key-value store's version counter |
//! | `ROOT/%server` | string | the run id of the server that last served the root |
//! | `ROOT/%settle` | string | set for a session timeout after the server changed (a restart, a failover): no grant while it lives |
//!
//! A host listens on one channel, `ROOT/%wake/HOST`: a release publishes
//! `grant MEMBER` there for each member it lets in (one message per new
//! holder, no channel every waiter hears), and a conflicting arrival
//! `behind MEMBER` for each holder it queues behind. A change of the head of
//! NAME's queue (election NAME's leader) or of the leader's value publishes
//! `leader NAME` on the channels of the hosts in `ROOT/%observers/NAME`.

use wardlock_backend::name::LockName;

/// The keys of one root.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    root: String,
}

impl Layout {
    pub(crate) fn new(root: &str) -> Self {
        Layout {
            root: root.to_owned(),
        }
    }

    /// The root, as scripts take it (they build session keys and channels
    /// from members).
    pub(crate) fn root(&self) -> &str {
        &self.root
    }

    /// `ROOT/NAME`: redis-py's lock key.
    pub(crate) fn lock_key(&self, name: &LockName) -> String {
        format!("{}/{name}", self.root)
    }

    pub(crate) fn queue_key(&self, name: &LockName) -> String {
        format!("{}/%queue/{name}", self.root)
    }

    /// `ROOT/%value/NAME`: election NAME's candidates' values and semaphore
    /// NAME's permit counts (a hash; the scripts derive it from the queue's
    /// key, see `values_of`).
    pub(crate) fn values_key(&self, name: &LockName) -> String {
        format!("{}/%value/{name}", self.root)
    }

    /// `ROOT/%observers/NAME`: who watches election NAME's leader (a set).
    pub(crate) fn observers_key(&self, name: &LockName) -> String {
        format!("{}/%observers/{name}", self.root)
    }

    /// Where a member lives: `ROOT/%queue/NAME/MEMBER` (members hold no
    /// `/`), the path of a hand-off task's node.
    pub(crate) fn member_path(&self, name: &LockName, member: &str) -> String {
        format!("{}/{member}", self.queue_key(name))
    }

    /// The lock and member of a [`Layout::member_path`].
    pub(crate) fn parse_member_path(&self, path: &str) -> Option<(LockName, String)> {
        let (queue, member) = path.rsplit_once('/')?;
        let name = queue.strip_prefix(&self.root)?.strip_prefix("/%queue/")?;
        Some((LockName::new(name).ok()?, member.to_owned()))
    }

    /// `ROOT/%data/NAME`: the guarded store of a lock (a hash).
    pub(crate) fn data_key(&self, name: &LockName) -> String {
        format!("{}/%data/{name}", self.root)
    }

    /// The guarded store's revision counter.
    pub(crate) fn revision_key(&self) -> String {
        format!("{}/%revision", self.root)
    }

    /// `ROOT/%kv/BUCKET`: a `wasi:keyvalue` bucket (a hash).
    pub(crate) fn kv_key(&self, bucket: &str) -> String {
        format!("{}/%kv/{bucket}", self.root)
    }

    /// The key-value store's version counter.
    pub(crate) fn kv_version_key(&self) -> String {
        format!("{}/%kvversion", self.root)
    }

    pub(crate) fn session_key(&self, session: &str) -> String {
        format!("{}/%session/{session}", self.root)
    }

    pub(crate) fn held_key(&self, session: &str) -> String {
        format!("{}/%held/{session}", self.root)
    }

    pub(crate) fn token_key(&self) -> String {
        format!("{}/%token", self.root)
    }

    pub(crate) fn server_key(&self) -> String {
        format!("{}/%server", self.root)
    }

    pub(crate) fn settle_key(&self) -> String {
        format!("{}/%settle", self.root)
    }

    pub(crate) fn wake_channel(&self, host: &str) -> String {
        format!("{}/%wake/{host}", self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_paths_round_trip_and_own_keys_are_apart() {
        let layout = Layout::new("/wardlock");
        let name = LockName::new("orders/east").expect("name");
        assert_eq!(layout.lock_key(&name), "/wardlock/orders/east");
        // Own keys hold a '%', which no lock name may: never a lock's key.
        assert!(LockName::new("%queue").is_err());
        let member = "7:w:abc:1";
        let path = layout.member_path(&name, member);
        assert_eq!(path, "/wardlock/%queue/orders/east/7:w:abc:1");
        assert_eq!(
            layout.parse_member_path(&path),
            Some((name.clone(), member.to_owned()))
        );
    }

    /// The scripts derive an election's values key from its queue's key
    /// (`values_of`: the root, `/%value/`, what follows `ROOT/%queue/`).
    #[test]
    fn the_scripts_derive_the_values_key_as_the_layout_names_it() {
        for root in ["/wardlock", "/{shop}/locks"] {
            let layout = Layout::new(root);
            let name = LockName::new("orders/east").expect("name");
            let queue = layout.queue_key(&name);
            let derived = format!("{root}/%value/{}", &queue[root.len() + 8..]);
            assert_eq!(derived, layout.values_key(&name));
        }
    }
}
