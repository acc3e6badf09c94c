//! The stored form the guarded and key-value stores share: a hash field
//! whose value is `NUMBER|BYTES` (a revision or version, then what was
//! written), read in one place.

use wardlock_backend::BackendError;

use crate::Shared;

/// Field `field` of hash `hash`, split into its number and its bytes; `None`
/// when absent. `what` names the store in errors.
///
/// # Errors
/// `Unavailable` when the server failed or the value is not `NUMBER|BYTES`.
pub(crate) async fn read(
    shared: &Shared,
    hash: &str,
    field: &str,
    what: &str,
) -> Result<Option<(u64, Vec<u8>)>, BackendError> {
    let link = shared.server.link().await?;
    let stored: Option<Vec<u8>> = shared
        .server
        .query(
            &link,
            redis::cmd("HGET").arg(hash).arg(field),
            &format!("read {what}"),
        )
        .await?;
    let Some(stored) = stored else {
        return Ok(None);
    };
    let at = stored.iter().position(|b| *b == b'|');
    let number = at
        .and_then(|at| std::str::from_utf8(&stored[..at]).ok())
        .and_then(|n| n.parse().ok());
    match (at, number) {
        (Some(at), Some(number)) => Ok(Some((number, stored[at + 1..].to_vec()))),
        _ => Err(BackendError::Unavailable(format!(
            "{what}: the entry {field:?} of {hash} is not in wardlock's form (NUMBER|BYTES)"
        ))),
    }
}
