//! A fenced resource, as the fault tests use it: it accepts a write only when
//! the writer's fencing token is at least the last token it accepted.
//!
//! "At least", not "above": the holder of the newest token may write as often
//! as it likes; a writer whose token was overtaken by a newer holder's is
//! refused from then on. So a stale holder — one whose lock was taken back and
//! granted to someone else who wrote — can never overwrite a newer value.

/// The store's books.
#[derive(Debug, Default)]
pub struct FencedStore {
    last: u64,
    /// Writes accepted so far.
    pub accepted: usize,
    /// Writes refused so far (stale tokens).
    pub rejected: usize,
}

impl FencedStore {
    /// Writes with `token`: accepted (`true`) unless a newer token wrote before.
    pub fn write(&mut self, token: u64) -> bool {
        if token >= self.last {
            self.last = token;
            self.accepted += 1;
            true
        } else {
            self.rejected += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FencedStore;

    #[test]
    fn a_newer_token_shuts_out_older_ones() {
        let mut store = FencedStore::default();
        assert!(store.write(5));
        assert!(store.write(5), "the newest holder may write again");
        assert!(store.write(9));
        assert!(!store.write(5), "overtaken");
        assert_eq!((store.accepted, store.rejected), (3, 1));
    }
}
