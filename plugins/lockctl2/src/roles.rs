//! Roles for instances that run one script (`wardlock run -n 2`): the first
//! to claim a file is role 1, the other role 2, and later commands name
//! their locks by role.
//!
//! | command      | prints                                    |
//! |--------------|-------------------------------------------|
//! | `claim PATH` | `claim 1` or `claim 2`, or `err claim: <text>` |
//!
//! `claim PATH` creates PATH (in a preopened directory) with `create_new`,
//! which is atomic: the instance that creates it is role 1, an instance
//! that finds it already there is role 2. After a claim, every later
//! command has `{mine}` replaced with `a` (role 1) or `b` (role 2) and
//! `{theirs}` with the other, and `{role}` with `1` or `2`: so
//! `acquire x - {mine}` then `acquire x - {theirs}` is an AB/BA pair.
//! Before a claim the placeholders are left as written.

use std::io::ErrorKind;

/// The role claimed, if any.
#[derive(Default)]
pub(super) struct Role(Option<u8>);

impl Role {
    /// `claim PATH`; `None` when `words` is not a claim.
    pub(super) fn execute(&mut self, words: &[&str]) -> Option<String> {
        let ["claim", path] = words else {
            return None;
        };
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path);
        let role = match created {
            Ok(_) => 1,
            Err(error) if error.kind() == ErrorKind::AlreadyExists => 2,
            Err(error) => return Some(format!("err claim: {error}")),
        };
        self.0 = Some(role);
        Some(format!("claim {role}"))
    }

    /// `command` with the placeholders replaced, once a role is claimed.
    pub(super) fn expand(&self, command: &str) -> String {
        let (role, mine, theirs) = match self.0 {
            Some(1) => ("1", "a", "b"),
            Some(_) => ("2", "b", "a"),
            None => return command.to_owned(),
        };
        command
            .replace("{mine}", mine)
            .replace("{theirs}", theirs)
            .replace("{role}", role)
    }
}
