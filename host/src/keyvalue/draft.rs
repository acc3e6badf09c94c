//! `wasi:keyvalue@0.2.0-draft`'s `store`, `atomics` and `batch` on
//! [`KeyValueView`], through the calls both versions share
//! ([`super::calls`]).

use wasmtime::component::Resource;

use super::KeyValueView;
use super::bindings::wasi::keyvalue::{atomics, batch, store};
use super::calls::Counter;
use super::ctx::BucketHandle;

super::served::serve_store_and_batch!(
    store,
    batch,
    u64,
    |cursor: Option<u64>| Ok(cursor.unwrap_or(0)),
    |next: u64| next
);

impl atomics::Host for KeyValueView<'_> {
    async fn increment(
        &mut self,
        handle: Resource<BucketHandle>,
        key: String,
        delta: u64,
    ) -> Answer<u64> {
        let bucket = self.bucket(&handle)?;
        let sum = self
            .ctx
            .add(&bucket, &key, i128::from(delta), Counter::U64)
            .await;
        // `add` keeps the sum within a u64's range.
        answer(sum.map(|n| u64::try_from(n).unwrap_or(u64::MAX)))
    }
}
