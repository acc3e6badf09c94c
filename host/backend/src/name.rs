//! Lock names: what a guest may ask for.
//!
//! A guest never sees or chooses a raw backend path. It names a lock with a short,
//! validated string; each backend maps the name under its own root (ZooKeeper:
//! `<root>/<name>`). Validation rejects anything that could escape that root or
//! confuse a path-based backend.
//!
//! A nested name's directory sits in its parent lock's queue directory (`a/b` is
//! the child `b` of lock `a`). Curator sorts children without its marker by their
//! whole name, and every client takes a child with its marker and a sequence for a
//! lock node, so a nested segment must sort after every real lock node and look
//! like none: it starts with a letter or `_`, as does the text after any Curator
//! marker (`lock-`, `__READ__`, `__WRIT__`) in it, and it does not end like a kazoo
//! node (`__lock__` or `__rlock__` and ten digits).

/// The longest accepted name, in bytes.
pub const MAX_NAME_LEN: usize = 255;

/// A validated lock name: 1..=255 bytes of `[A-Za-z0-9._-]` in `/`-separated
/// segments, none empty, `.` or `..`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockName(String);

/// Why a name was rejected; the message names the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidName {
    /// The name is empty.
    #[error("lock name is empty")]
    Empty,
    /// The name is longer than [`MAX_NAME_LEN`].
    #[error("lock name is {len} bytes long; at most {max} are allowed", max = MAX_NAME_LEN)]
    TooLong {
        /// The name's length in bytes.
        len: usize,
    },
    /// The name contains a character outside `[A-Za-z0-9._-/]`.
    #[error(
        "lock name {name:?} contains {found:?} at byte {at}; allowed are A-Z a-z 0-9 - _ . and / between segments"
    )]
    BadCharacter {
        /// The (possibly shortened) name.
        name: String,
        /// The offending character.
        found: char,
        /// Its byte offset.
        at: usize,
    },
    /// A `/`-separated segment is empty, `.` or `..`.
    #[error("lock name {name:?} has an {what} segment")]
    BadSegment {
        /// The name.
        name: String,
        /// `empty`, `"."` or `".."`.
        what: &'static str,
    },
    /// A nested segment could pass for a lock node in its parent lock's queue.
    #[error(
        "lock name {name:?}: segment {segment:?} lies in the queue of lock {parent:?}, where Curator or kazoo clients would take it for a lock node; a nested segment must start with a letter or _ (so must the text after any lock-, __READ__ or __WRIT__ in it) and must not end in __lock__/__rlock__ and 10 digits"
    )]
    LooksLikeLockNode {
        /// The name.
        name: String,
        /// The offending segment.
        segment: String,
        /// The lock whose queue directory would hold it.
        parent: String,
    },
}

impl LockName {
    /// Validates `name`.
    ///
    /// # Errors
    /// [`InvalidName`] saying what is wrong with it.
    pub fn new(name: &str) -> Result<LockName, InvalidName> {
        if name.is_empty() {
            return Err(InvalidName::Empty);
        }
        if name.len() > MAX_NAME_LEN {
            return Err(InvalidName::TooLong { len: name.len() });
        }
        if let Some((at, found)) = name
            .char_indices()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')))
        {
            return Err(InvalidName::BadCharacter {
                name: name.to_owned(),
                found,
                at,
            });
        }
        for segment in name.split('/') {
            let what = match segment {
                "" => "empty",
                "." => "\".\"",
                ".." => "\"..\"",
                _ => continue,
            };
            return Err(InvalidName::BadSegment {
                name: name.to_owned(),
                what,
            });
        }
        let mut parent_len = 0;
        for (index, segment) in name.split('/').enumerate() {
            if index > 0 && looks_like_lock_node(segment) {
                return Err(InvalidName::LooksLikeLockNode {
                    name: name.to_owned(),
                    segment: segment.to_owned(),
                    parent: name[..parent_len].to_owned(),
                });
            }
            parent_len += segment.len() + usize::from(index > 0);
        }
        Ok(LockName(name.to_owned()))
    }

    /// A name no guest can give (it contains `%`, which no lock name
    /// does), for an engine's internal queues beside the locks' (the
    /// in-memory engine's elections). Never shown to a guest as a lock.
    pub fn internal(room: &str, name: &LockName) -> LockName {
        LockName(format!("%{room}/{}", name.0))
    }

    /// The name `self` was made from by [`LockName::internal`] in `room`.
    pub fn strip_internal(&self, room: &str) -> Option<LockName> {
        let rest = self.0.strip_prefix('%')?.strip_prefix(room)?;
        rest.strip_prefix('/').map(|name| LockName(name.to_owned()))
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True if `self` equals `prefix` or lies below it (segment-wise: `orders`
    /// covers `orders/eu` but not `orders2`).
    pub fn is_within(&self, prefix: &LockName) -> bool {
        match self.0.strip_prefix(prefix.as_str()) {
            Some(rest) => rest.is_empty() || rest.starts_with('/'),
            None => false,
        }
    }
}

/// True if `segment`, as a child of a lock's queue directory, could sort before a
/// lock node in Curator's order or match a client's lock node pattern.
fn looks_like_lock_node(segment: &str) -> bool {
    let sort_keys = [
        after_last(after_last(segment, "__READ__"), "__WRIT__"),
        after_last(segment, "lock-"),
    ];
    let bad_start = sort_keys.iter().any(|key| {
        !key.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
    });
    let kazoo_like = segment.len() >= 10
        && segment[segment.len() - 10..]
            .bytes()
            .all(|b| b.is_ascii_digit())
        && {
            let head = &segment[..segment.len() - 10];
            let head = head.strip_suffix('-').unwrap_or(head);
            head.ends_with("__lock__") || head.ends_with("__rlock__")
        };
    bad_start || kazoo_like
}

/// The text after the last `marker` in `text`, or all of it.
fn after_last<'a>(text: &'a str, marker: &str) -> &'a str {
    text.rfind(marker)
        .map_or(text, |at| &text[at + marker.len()..])
}

impl std::fmt::Display for LockName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for ok in ["orders", "a/b/c", "v1.2-x_y", "A", "x.y/z..w"] {
            assert_eq!(LockName::new(ok).map(|n| n.0), Ok(ok.to_owned()));
        }
        assert!(LockName::new(&"x".repeat(MAX_NAME_LEN)).is_ok());
    }

    #[test]
    fn rejects_bad_names_saying_why() {
        assert_eq!(LockName::new(""), Err(InvalidName::Empty));
        assert_eq!(
            LockName::new(&"x".repeat(MAX_NAME_LEN + 1)),
            Err(InvalidName::TooLong { len: 256 })
        );
        for bad in ["/a", "a/", "a//b", "./a", "a/..", "..", "."] {
            assert!(
                matches!(LockName::new(bad), Err(InvalidName::BadSegment { .. })),
                "{bad}"
            );
        }
        for bad in ["a b", "a:b", "é", "a\0", "a\\b", "zk*"] {
            let err = LockName::new(bad).unwrap_err();
            assert!(matches!(err, InvalidName::BadCharacter { .. }), "{bad}");
            assert!(err.to_string().contains("allowed are"), "{err}");
        }
    }

    #[test]
    fn nested_segments_never_pass_for_lock_nodes() {
        for bad in [
            "m/x__WRIT__0",
            "m/lock-0",
            "m/0",
            "m/-x",
            "m/.x",
            "m/block-1",
            "m/a__READ__9",
            "m/x/lock-",
            &format!("m/{}__lock__0000000001", "a".repeat(32)),
            "m/a__rlock__-0000000001",
        ] {
            let err = LockName::new(bad).expect_err(bad);
            assert!(
                matches!(err, InvalidName::LooksLikeLockNode { .. }),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("queue of lock"), "{err}");
        }
        for ok in ["0/x", "m/x", "m/clock-tower", "m/_x", "m/x/y", "9lives"] {
            assert!(LockName::new(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn prefix_matching_is_segment_wise() {
        let n = |s| LockName::new(s).unwrap();
        assert!(n("orders").is_within(&n("orders")));
        assert!(n("orders/eu").is_within(&n("orders")));
        assert!(!n("orders2").is_within(&n("orders")));
        assert!(!n("ord").is_within(&n("orders")));
    }
}
