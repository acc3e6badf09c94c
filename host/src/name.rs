//! Lock names: what a guest may ask for.
//!
//! A guest never sees or chooses a raw backend path. It names a lock with a short,
//! validated string; each backend maps the name under its own root (ZooKeeper:
//! `<root>/<name>`). Validation rejects anything that could escape that root or
//! confuse a path-based backend.

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
        Ok(LockName(name.to_owned()))
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
    fn prefix_matching_is_segment_wise() {
        let n = |s| LockName::new(s).unwrap();
        assert!(n("orders").is_within(&n("orders")));
        assert!(n("orders/eu").is_within(&n("orders")));
        assert!(!n("orders2").is_within(&n("orders")));
        assert!(!n("ord").is_within(&n("orders")));
    }
}
