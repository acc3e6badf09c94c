//! What one plugin may do: which names it is granted and how many handles it may keep.

use crate::name::{InvalidName, LockName};

/// The default cap on live lock handles per guest instance.
pub const DEFAULT_MAX_HANDLES: usize = 1024;

/// Per-plugin limits, applied to each of its instances.
#[derive(Debug, Clone)]
pub struct LockPolicy {
    /// Name prefixes the plugin may lock; `None` grants every name.
    grants: Option<Vec<LockName>>,
    /// Most live `lock` handles (held or released-but-not-dropped) per instance.
    max_handles: usize,
}

impl Default for LockPolicy {
    fn default() -> Self {
        LockPolicy {
            grants: None,
            max_handles: DEFAULT_MAX_HANDLES,
        }
    }
}

impl LockPolicy {
    /// Everything granted, default caps.
    pub fn new() -> Self {
        Self::default()
    }

    /// Restricts the plugin to names within `prefix` (segment-wise). May be called
    /// repeatedly: any matching prefix grants the name.
    ///
    /// # Errors
    /// [`InvalidName`] when `prefix` is not itself a valid lock name.
    pub fn grant(mut self, prefix: &str) -> Result<Self, InvalidName> {
        let prefix = LockName::new(prefix)?;
        self.grants.get_or_insert_with(Vec::new).push(prefix);
        Ok(self)
    }

    /// Sets the cap on live handles per instance.
    pub fn with_max_handles(mut self, max: usize) -> Self {
        self.max_handles = max;
        self
    }

    /// The cap on live handles per instance.
    pub fn max_handles(&self) -> usize {
        self.max_handles
    }

    /// True if the plugin may lock `name`.
    pub fn allows(&self, name: &LockName) -> bool {
        match &self.grants {
            None => true,
            Some(prefixes) => prefixes.iter().any(|p| name.is_within(p)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_restrict_by_prefix() {
        let name = |s| LockName::new(s).unwrap();
        assert!(LockPolicy::new().allows(&name("anything")));
        let p = LockPolicy::new()
            .grant("orders")
            .unwrap()
            .grant("jobs/eu")
            .unwrap();
        assert!(p.allows(&name("orders/eu1")));
        assert!(p.allows(&name("jobs/eu")));
        assert!(!p.allows(&name("jobs/us")));
        assert!(!p.allows(&name("ordersx")));
        assert!(LockPolicy::new().grant("../x").is_err());
    }
}
