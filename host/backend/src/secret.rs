//! Secrets (passwords, `user:password` credentials) kept out of every
//! printout: `Debug` and `Display` show `<redacted>`, so a configuration can be
//! logged, shown in an error or dumped by a panic without leaking them. Read
//! them from a file ([`Secret::from_file`]), never from the command line,
//! where every user of the machine sees them in `ps`.

use std::path::Path;

/// A secret value; only [`Secret::expose`] shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// Reads a secret from `path`: the file's text without its trailing
    /// newline.
    ///
    /// # Errors
    /// The file cannot be read or is empty; the message names the path (never
    /// the contents).
    pub fn from_file(path: &Path) -> Result<Self, std::io::Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
        })?;
        let value = text.trim_end_matches(['\n', '\r']);
        if value.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is empty", path.display()),
            ));
        }
        Ok(Secret(value.to_owned()))
    }

    /// The secret itself, for the one place that hands it to a client.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints_and_reads_from_a_file() {
        let secret = Secret::new("wardlock:s3cret");
        assert_eq!(format!("{secret:?} {secret}"), "<redacted> <redacted>");
        assert_eq!(secret.expose(), "wardlock:s3cret");
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path();
        let file = dir.join("digest");
        std::fs::write(&file, "user:pass\n").expect("write");
        assert_eq!(
            Secret::from_file(&file).expect("read").expose(),
            "user:pass"
        );
        std::fs::write(&file, "\n").expect("write");
        let empty = Secret::from_file(&file).expect_err("empty").to_string();
        assert!(
            empty.contains("is empty") && !empty.contains("user"),
            "{empty}"
        );
        let missing = Secret::from_file(&dir.join("missing")).expect_err("missing");
        assert!(missing.to_string().contains("missing"), "{missing}");
    }
}
