//! `wasi:keyvalue@0.2.0-draft2`'s `store`, `atomics` (with `cas` and
//! `swap`) and `batch` on [`KeyValueView`], through the calls both versions
//! share ([`super::calls`]).
//!
//! A `cas` handle is the entry's value and engine version read when it was
//! made; `swap` writes only if the entry is still at that version (absent:
//! still absent), in one compare on the engine, fenced like every other
//! write. When another write got in first it writes nothing and answers
//! `cas-failed` with a handle read afresh, as the WIT asks.

use wasmtime::component::Resource;

use super::KeyValueView;
use super::bindings_draft2::wasi::keyvalue::{atomics, batch, store};
use super::calls::Counter;
use super::ctx::{BucketHandle, CasHandle};

super::served::serve_store_and_batch!(
    store,
    batch,
    String,
    |cursor: Option<String>| offset_of(cursor.as_deref()),
    |next: u64| next.to_string()
);

/// A `list-keys` cursor this store gave: the decimal offset of the page.
fn offset_of(cursor: Option<&str>) -> Result<u64, String> {
    match cursor {
        None => Ok(0),
        Some(text) => text.parse().map_err(|_| {
            format!("cursor {text:?} is not one this store gave (it gives decimal offsets)")
        }),
    }
}

impl KeyValueView<'_> {
    /// A `cas` handle on `key` of `bucket`, read now.
    async fn read_cas(
        &mut self,
        bucket: crate::backend::keyvalue::Bucket,
        key: String,
    ) -> wasmtime::Result<Result<Resource<CasHandle>, String>> {
        let read = match self.ctx.read(&bucket, &key).await {
            Ok(read) => read,
            Err(why) => return Ok(Err(why)),
        };
        let (current, version) = match read {
            Some((value, version)) => (Some(value), Some(version)),
            None => (None, None),
        };
        let handle = CasHandle {
            bucket,
            key,
            current,
            version,
        };
        Ok(Ok(self.table.push(handle)?))
    }
}

impl atomics::HostCas for KeyValueView<'_> {
    async fn new(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
    ) -> Answer<Resource<CasHandle>> {
        let bucket = self.bucket(&bucket)?;
        let handle = self.read_cas(bucket, key).await?;
        Ok(handle.map_err(store::Error::Other))
    }

    async fn current(&mut self, handle: Resource<CasHandle>) -> Answer<Option<Vec<u8>>> {
        Ok(Ok(self.table.get(&handle)?.current.clone()))
    }

    async fn drop(&mut self, handle: Resource<CasHandle>) -> wasmtime::Result<()> {
        self.table.delete(handle)?;
        Ok(())
    }
}

impl atomics::Host for KeyValueView<'_> {
    async fn increment(
        &mut self,
        handle: Resource<BucketHandle>,
        key: String,
        delta: i64,
    ) -> Answer<i64> {
        let bucket = self.bucket(&handle)?;
        let sum = self
            .ctx
            .add(&bucket, &key, i128::from(delta), Counter::S64)
            .await;
        // `add` keeps the sum within an s64's range.
        answer(sum.map(|n| i64::try_from(n).unwrap_or(i64::MAX)))
    }

    async fn swap(
        &mut self,
        cas: Resource<CasHandle>,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), atomics::CasError>> {
        let CasHandle {
            bucket,
            key,
            version,
            ..
        } = self.table.delete(cas)?;
        match self.ctx.write_if(&bucket, &key, version, value).await {
            Ok(true) => Ok(Ok(())),
            Ok(false) => Ok(Err(match self.read_cas(bucket, key).await? {
                Ok(fresh) => atomics::CasError::CasFailed(fresh),
                Err(why) => atomics::CasError::StoreError(store::Error::Other(why)),
            })),
            Err(why) => Ok(Err(atomics::CasError::StoreError(store::Error::Other(why)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::offset_of;

    #[test]
    fn a_cursor_is_a_decimal_offset_and_anything_else_is_refused() {
        assert_eq!(offset_of(None), Ok(0));
        assert_eq!(offset_of(Some("1000")), Ok(1000));
        let refused = offset_of(Some("page-2")).unwrap_err();
        assert!(refused.contains("\"page-2\""), "{refused}");
    }
}
