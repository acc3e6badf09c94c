//! Which buckets guests may open: the operator's list (`--kv-bucket`), or
//! only `default` when the operator names none.

use crate::backend::BackendError;
use crate::backend::keyvalue::Bucket;

/// The buckets guests may open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvBuckets(Vec<Bucket>);

impl KvBuckets {
    /// Exactly `names`; none at all means `default` alone.
    ///
    /// # Errors
    /// The first name that is no valid bucket name, and why.
    pub fn new<S: AsRef<str>>(names: &[S]) -> Result<KvBuckets, BackendError> {
        if names.is_empty() {
            return Ok(KvBuckets::default());
        }
        let mut buckets = names
            .iter()
            .map(|name| Bucket::new(name.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        buckets.sort();
        buckets.dedup();
        Ok(KvBuckets(buckets))
    }

    /// The bucket `identifier` names, if guests may open it.
    pub fn open(&self, identifier: &str) -> Option<Bucket> {
        self.0.iter().find(|b| b.as_str() == identifier).cloned()
    }

    /// The names guests may open, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(Bucket::as_str)
    }
}

impl Default for KvBuckets {
    fn default() -> Self {
        KvBuckets(vec![Bucket::default()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_bucket_alone_unless_the_operator_names_others() {
        let unset = KvBuckets::new::<&str>(&[]).expect("default");
        assert!(unset.open("default").is_some());
        assert!(unset.open("orders").is_none());
        let named = KvBuckets::new(&["orders", "carts", "orders"]).expect("named");
        assert_eq!(named.names().collect::<Vec<_>>(), ["carts", "orders"]);
        assert!(named.open("default").is_none());
        let bad = KvBuckets::new(&["a/b"]).expect_err("bad").to_string();
        assert!(bad.contains("\"a/b\""), "{bad}");
    }
}
