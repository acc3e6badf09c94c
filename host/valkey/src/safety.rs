//! What the server must be for its locks to be safe, read at every connect
//! (`INFO`, `CONFIG GET`), and refused, naming the setting and why, where it
//! cannot be: a lock key an eviction policy may drop, a cluster that spreads
//! a lock's keys over nodes, a replica, a server that forgets the token
//! counter when it restarts, a version without what the scripts use.

use std::collections::HashMap;

/// What the engine learned of a server at connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerFacts {
    /// `redis` or `valkey`.
    pub(crate) product: String,
    /// Its version, as it reports it.
    pub(crate) version: String,
    /// The server process's run id (new at every restart, other on another
    /// server): what tells a host that its sessions are over.
    pub(crate) run_id: String,
    /// Settings that cannot be safe, each a sentence, when they were
    /// accepted (`--redis-accept-unsafe`).
    pub(crate) unsafe_settings: Vec<String>,
}

/// A server's answers: `INFO` (every section) and the `CONFIG GET` pairs
/// read (`None` where `CONFIG` is not allowed).
pub(crate) struct Answers<'a> {
    pub(crate) info: &'a str,
    pub(crate) config: Option<&'a HashMap<String, String>>,
    /// The root every key of the host starts with.
    pub(crate) root: &'a str,
    /// On a cluster-mode server, what it says of the root's slot (read
    /// only when the root carries a hash tag).
    pub(crate) cluster: Option<RootSlot>,
}

/// A cluster-mode server's answer about the root's hash slot: which slot
/// (`CLUSTER KEYSLOT`) and whether this node serves it (`CLUSTER NODES`,
/// the `myself` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RootSlot {
    pub(crate) slot: i64,
    pub(crate) served_here: bool,
}

/// The hash tag of `key` as Redis Cluster reads it: what lies between the
/// first `{` and the next `}`, when that is not empty. Every key of a root
/// with a tag maps to the tag's slot, whatever follows.
pub(crate) fn hash_tag(key: &str) -> Option<&str> {
    let open = key.find('{')?;
    let rest = &key[open + 1..];
    let close = rest.find('}')?;
    (close > 0).then(|| &rest[..close])
}

/// Whether the `myself` line of `CLUSTER NODES` lists `slot` among the
/// slots this node serves (`0-5460`, `5461`; `[…]` entries are slots in
/// migration, not served).
pub(crate) fn serves(nodes: &str, slot: i64) -> bool {
    let Some(myself) = nodes.lines().find(|line| {
        line.split_whitespace()
            .nth(2)
            .is_some_and(|flags| flags.split(',').any(|f| f == "myself"))
    }) else {
        return false;
    };
    myself
        .split_whitespace()
        .skip(8)
        .filter(|range| !range.starts_with('['))
        .any(|range| {
            let (low, high) = range.split_once('-').unwrap_or((range, range));
            match (low.parse::<i64>(), high.parse::<i64>()) {
                (Ok(low), Ok(high)) => (low..=high).contains(&slot),
                _ => false,
            }
        })
}

/// Whether `info` and `config` describe a server that can keep locks safe.
///
/// # Errors
/// A sentence naming what is refused, when something is; an unsafe setting
/// is refused unless `accept_unsafe` (then it is listed in the facts).
pub(crate) fn judge(answers: &Answers<'_>, accept_unsafe: bool) -> Result<ServerFacts, String> {
    let info = parse_info(answers.info);
    let field = |key: &str| info.get(key).map(String::as_str).unwrap_or("");
    let (product, version) = match info.get("valkey_version") {
        Some(v) => ("valkey", v.clone()),
        None => ("redis", field("redis_version").to_owned()),
    };
    let (major, minor) = major_minor(&version);
    let (want_major, want_minor) = if product == "valkey" { (7, 2) } else { (7, 0) };
    if (major, minor) < (want_major, want_minor) {
        return Err(format!(
            "{product} {version} is too old for wardlock's locks: {product} {want_major}.{want_minor} or later is needed (its scripts rely on them)"
        ));
    }
    if field("role") != "master" {
        return Err(format!(
            "the server is a replica (role:{}): locks must be taken on the primary, where writes go; point --redis at it",
            field("role")
        ));
    }
    if cluster_enabled(answers.info) {
        let root = answers.root;
        match (hash_tag(root), answers.cluster) {
            (None, _) => {
                return Err(format!(
                    "the server runs in cluster mode, where a lock's queue, its session keys and its token counter may live on different nodes and no script can see them together: give the root a hash tag, so that every key of it maps to one slot (e.g. --root /{{wardlock}}; the root is {root:?}), or use a server that is not a cluster"
                ));
            }
            (Some(_), None) => {
                return Err(format!(
                    "the server runs in cluster mode and did not say which node serves the root {root:?}'s slot"
                ));
            }
            (
                Some(_),
                Some(RootSlot {
                    slot,
                    served_here: false,
                }),
            ) => {
                return Err(format!(
                    "the server runs in cluster mode and the root {root:?}'s slot {slot} is served by another node: point --redis at the node that serves it"
                ));
            }
            (Some(_), Some(_)) => {}
        }
    }
    let mut unsafe_settings = Vec::new();
    let policy = field("maxmemory_policy");
    if !policy.is_empty() && policy != "noeviction" {
        unsafe_settings.push(format!(
            "maxmemory-policy is {policy}: when memory runs short the server may evict a session or lock key, and a second holder is granted while the first still holds (set maxmemory-policy noeviction)"
        ));
    }
    if let Some(config) = answers.config {
        let aof = config.get("appendonly").map(String::as_str) == Some("yes");
        let save = config.get("save").map(String::as_str).unwrap_or("");
        if !aof && save.trim().is_empty() {
            unsafe_settings.push(
                "the server persists nothing (appendonly no, save \"\"): a restart forgets the fencing-token counter and tokens go backwards (turn on appendonly yes, or RDB snapshots)".into(),
            );
        }
    } else {
        unsafe_settings.push(
            "CONFIG GET is not allowed to this user, so persistence cannot be checked (allow +config|get, or accept the risk)".into(),
        );
    }
    if !unsafe_settings.is_empty() && !accept_unsafe {
        return Err(format!(
            "refused, the server cannot keep locks safe: {}; --redis-accept-unsafe runs anyway and says so",
            unsafe_settings.join("; ")
        ));
    }
    Ok(ServerFacts {
        product: product.to_owned(),
        version,
        run_id: field("run_id").to_owned(),
        unsafe_settings,
    })
}

/// Whether `INFO` says the server runs in cluster mode.
pub(crate) fn cluster_enabled(info: &str) -> bool {
    parse_info(info).get("cluster_enabled").map(String::as_str) == Some("1")
}

/// `INFO`'s `key:value` lines.
fn parse_info(info: &str) -> HashMap<String, String> {
    info.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The major and minor numbers of `7.0.15` (0 where unreadable).
fn major_minor(version: &str) -> (u32, u32) {
    let mut parts = version.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REDIS: &str = "# Server\r\nredis_version:7.0.15\r\nrun_id:abc\r\n# Replication\r\nrole:master\r\n# Cluster\r\ncluster_enabled:0\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n";

    fn config(aof: &str, save: &str) -> HashMap<String, String> {
        HashMap::from([
            ("appendonly".to_owned(), aof.to_owned()),
            ("save".to_owned(), save.to_owned()),
        ])
    }

    fn judged(
        info: &str,
        config: &HashMap<String, String>,
        accept: bool,
    ) -> Result<ServerFacts, String> {
        judge(
            &Answers {
                info,
                config: Some(config),
                root: "/wardlock",
                cluster: None,
            },
            accept,
        )
    }

    const CLUSTER_NODES: &str = "07c3 127.0.0.1:7001@17001 master - 0 1 2 connected 5461-10922\n\
        e7d1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 12000 [5461->-07c3]\n";

    #[test]
    fn a_hash_tag_is_what_lies_in_the_first_braces() {
        assert_eq!(hash_tag("/{wardlock}/orders"), Some("wardlock"));
        assert_eq!(hash_tag("/{a}{b}"), Some("a"));
        assert_eq!(hash_tag("/wardlock"), None);
        assert_eq!(hash_tag("/{}/x"), None);
        assert_eq!(hash_tag("/{open"), None);
    }

    #[test]
    fn the_myself_line_says_which_slots_this_node_serves() {
        assert!(serves(CLUSTER_NODES, 0));
        assert!(serves(CLUSTER_NODES, 5460));
        assert!(serves(CLUSTER_NODES, 12000));
        assert!(
            !serves(CLUSTER_NODES, 5461),
            "another node's, and migrating"
        );
        assert!(!serves(CLUSTER_NODES, 16383));
        assert!(!serves("", 0));
    }

    #[test]
    fn cluster_mode_needs_a_hash_tagged_root_served_here() {
        let cluster = REDIS.replace("cluster_enabled:0", "cluster_enabled:1");
        let config = config("yes", "");
        let at = |root: &'static str, cluster_answer: Option<RootSlot>| {
            judge(
                &Answers {
                    info: &cluster,
                    config: Some(&config),
                    root,
                    cluster: cluster_answer,
                },
                false,
            )
        };
        let untagged = at("/wardlock", None).expect_err("no tag");
        assert!(
            untagged.contains("hash tag") && untagged.contains("\"/wardlock\""),
            "{untagged}"
        );
        let elsewhere = RootSlot {
            slot: 3,
            served_here: false,
        };
        let moved = at("/{w}", Some(elsewhere)).expect_err("another node's slot");
        assert!(
            moved.contains("slot 3 is served by another node"),
            "{moved}"
        );
        let here = RootSlot {
            slot: 3,
            served_here: true,
        };
        assert!(at("/{w}", Some(here)).is_ok());
    }

    #[test]
    fn a_safe_server_passes() {
        let facts = judged(REDIS, &config("yes", ""), false).expect("safe");
        assert_eq!(
            (facts.product.as_str(), facts.run_id.as_str()),
            ("redis", "abc")
        );
        assert!(facts.unsafe_settings.is_empty());
        let valkey = REDIS.replace(
            "redis_version:7.0.15",
            "redis_version:7.2.4\r\nvalkey_version:9.1.2",
        );
        assert_eq!(
            judged(&valkey, &config("no", "3600 1"), false)
                .expect("safe")
                .product,
            "valkey"
        );
    }

    #[test]
    fn unsafe_settings_are_named_and_refused_unless_accepted() {
        let evicting = REDIS.replace("noeviction", "allkeys-lru");
        let refused = judged(&evicting, &config("yes", ""), false).expect_err("refused");
        assert!(
            refused.contains("maxmemory-policy is allkeys-lru"),
            "{refused}"
        );
        let forgetting = judged(REDIS, &config("no", ""), false).expect_err("refused");
        assert!(forgetting.contains("persists nothing"), "{forgetting}");
        let accepted = judged(&evicting, &config("no", ""), true).expect("accepted");
        assert_eq!(accepted.unsafe_settings.len(), 2);
    }

    #[test]
    fn what_cannot_work_is_refused_even_when_accepted() {
        let replica = REDIS.replace("role:master", "role:slave");
        assert!(
            judged(&replica, &config("yes", ""), true)
                .expect_err("replica")
                .contains("replica")
        );
        let cluster = REDIS.replace("cluster_enabled:0", "cluster_enabled:1");
        assert!(
            judged(&cluster, &config("yes", ""), true)
                .expect_err("cluster, its root untagged")
                .contains("cluster mode")
        );
        let old = REDIS.replace("7.0.15", "6.2.14");
        assert!(
            judged(&old, &config("yes", ""), true)
                .expect_err("old")
                .contains("too old")
        );
    }
}
