//! `store` and `batch`, alike in both WIT versions but for `list-keys`'
//! cursor type, implemented on [`super::KeyValueView`] once for each
//! version's generated traits by [`serve_store_and_batch`].

/// Implements `$store::Host`, `$store::HostBucket` and `$batch::Host` on
/// `KeyValueView` through the shared calls ([`super::calls`]). `$skip`
/// turns a guest's `list-keys` cursor (of type `$cursor`) into the offset it
/// names, `$next` an offset into the cursor given back.
macro_rules! serve_store_and_batch {
    ($store:ident, $batch:ident, $cursor:ty, $skip:expr, $next:expr) => {
        type Answer<T> = wasmtime::Result<Result<T, $store::Error>>;

        /// The version's answer for a shared call's.
        fn answer<T>(outcome: Result<T, String>) -> Answer<T> {
            Ok(outcome.map_err($store::Error::Other))
        }

        impl $store::Host for KeyValueView<'_> {
            async fn open(&mut self, identifier: String) -> Answer<Resource<BucketHandle>> {
                match self.open_bucket(&identifier)? {
                    Some(handle) => Ok(Ok(handle)),
                    None => Ok(Err($store::Error::NoSuchStore)),
                }
            }
        }

        impl $store::HostBucket for KeyValueView<'_> {
            async fn get(
                &mut self,
                handle: Resource<BucketHandle>,
                key: String,
            ) -> Answer<Option<Vec<u8>>> {
                let bucket = self.bucket(&handle)?;
                let entry = self.ctx.read(&bucket, &key).await;
                answer(entry.map(|e| e.map(|(value, _)| value)))
            }

            async fn set(
                &mut self,
                handle: Resource<BucketHandle>,
                key: String,
                value: Vec<u8>,
            ) -> Answer<()> {
                let bucket = self.bucket(&handle)?;
                answer(self.ctx.write_one(&bucket, &key, Some(value)).await)
            }

            async fn delete(&mut self, handle: Resource<BucketHandle>, key: String) -> Answer<()> {
                let bucket = self.bucket(&handle)?;
                answer(self.ctx.write_one(&bucket, &key, None).await)
            }

            async fn exists(
                &mut self,
                handle: Resource<BucketHandle>,
                key: String,
            ) -> Answer<bool> {
                let bucket = self.bucket(&handle)?;
                answer(self.ctx.read(&bucket, &key).await.map(|e| e.is_some()))
            }

            async fn list_keys(
                &mut self,
                handle: Resource<BucketHandle>,
                cursor: Option<$cursor>,
            ) -> Answer<$store::KeyResponse> {
                let bucket = self.bucket(&handle)?;
                let skip: Result<u64, String> = ($skip)(cursor);
                let page = match skip {
                    Ok(skip) => self.ctx.keys(&bucket, skip).await,
                    Err(why) => Err(why),
                };
                answer(page.map(|(keys, next)| $store::KeyResponse {
                    keys,
                    cursor: next.map($next),
                }))
            }

            async fn drop(&mut self, handle: Resource<BucketHandle>) -> wasmtime::Result<()> {
                self.table.delete(handle)?;
                Ok(())
            }
        }

        impl $batch::Host for KeyValueView<'_> {
            async fn get_many(
                &mut self,
                handle: Resource<BucketHandle>,
                keys: Vec<String>,
            ) -> Answer<Vec<Option<(String, Vec<u8>)>>> {
                let bucket = self.bucket(&handle)?;
                answer(self.ctx.read_many(&bucket, keys).await)
            }

            async fn set_many(
                &mut self,
                handle: Resource<BucketHandle>,
                key_values: Vec<(String, Vec<u8>)>,
            ) -> Answer<()> {
                let bucket = self.bucket(&handle)?;
                let puts = key_values.into_iter().map(|(k, v)| (k, Some(v))).collect();
                answer(self.ctx.write_many(&bucket, puts).await)
            }

            async fn delete_many(
                &mut self,
                handle: Resource<BucketHandle>,
                keys: Vec<String>,
            ) -> Answer<()> {
                let bucket = self.bucket(&handle)?;
                let deletes = keys.into_iter().map(|k| (k, None)).collect();
                answer(self.ctx.write_many(&bucket, deletes).await)
            }
        }
    };
}

pub(super) use serve_store_and_batch;
