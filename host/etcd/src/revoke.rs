//! Revocation on etcd (a layout of wardlock's own; etcd has no standard one):
//! asking a holder to give a lock up puts a *marker* key
//! `<root>/%revoke/<NAME>/<holder's lease hex>` whose value is the create
//! revision of the holder's key, under the holder's own lease (so it goes with
//! the holder's lease), and deleted with the holder's key. `%` never occurs in a lock name, so no lock's prefix covers a
//! marker. A marker names one grant: a later key of the same lease (a new
//! grant) has another create revision and is not asked.
//!
//! A holder learns of it lazily, the first time its guest asks (as on
//! ZooKeeper): a watch on its marker, then one read of it. With host-local
//! hand-off one key serves the host's local holders: the first to see the
//! marker tells the lock's task, which drains the key.
//!
//! `etcdctl lock` holders are asked too (and counted) but ignore it, as
//! Curator's non-revocable locks ignore `__REVOKE__`.

use std::sync::Arc;

use etcd_client::{EventType, PutOptions};
use tokio::sync::watch;

use super::Shared;
use super::inspect::contenders;
use super::layout::room_prefix;
use super::watch::confirmed;
use wardlock_backend::BackendError;
use wardlock_backend::name::LockName;
use wardlock_backend::revocation::Seen;

/// The marker key that asks the holder under lease `lease` to give `name` up.
pub(super) fn marker_key(root: &str, name: &LockName, lease: i64) -> String {
    format!("{}{lease:x}", room_prefix(root, "revoke", name))
}

/// The marker that may ask the holder of lock key `key` (`<root>/<NAME>/<lease
/// hex>`) to give it up; `None` for keys that are no lock keys (permits).
/// Deleted with the key, so no marker outlives its grant.
pub(super) fn marker_of_key(root: &str, key: &str) -> Option<String> {
    let rest = key.strip_prefix(&format!("{root}/"))?;
    (!rest.starts_with('%')).then(|| format!("{root}/%revoke/{rest}"))
}

/// Puts a marker for every current holder of lock `name`; returns how many
/// were put (a holder whose lease ended meanwhile is not counted).
///
/// # Errors
/// `Unavailable` when etcd cannot be reached; `Refused` when it refused.
///
/// # Cancellation safety
/// Cancel safe: each marker is complete on its own.
pub(super) async fn request(shared: &Shared, name: &LockName) -> Result<u32, BackendError> {
    let holders: Vec<_> = contenders(shared, name)
        .await?
        .into_iter()
        .filter(|c| c.holds && c.lease != 0)
        .collect();
    let mut client = shared.leases.client().await?;
    let root = &shared.leases.config().root;
    let mut asked = 0u32;
    for holder in holders {
        let marker = marker_key(root, name, holder.lease);
        let options = PutOptions::new().with_lease(holder.lease);
        let put = tokio::time::timeout(
            shared.leases.config().connect_timeout,
            client.put(marker, holder.revision.to_string(), Some(options)),
        )
        .await;
        match put {
            Ok(Ok(_)) => asked = asked.saturating_add(1),
            // The holder's lease is gone: so is its grant.
            Ok(Err(error)) if error.to_string().contains("lease not found") => {}
            Ok(Err(error)) => return Err(super::errors::classify(&error, "ask a holder")),
            Err(_) => {
                return Err(BackendError::Unavailable(
                    "etcd did not answer a revocation request in time".into(),
                ));
            }
        }
    }
    Ok(asked)
}

/// Called once when a watch sees its marker (a host-local grant tells its
/// lock's task, with the key's path).
pub(super) type OnAsked = Box<dyn FnOnce(&str) + Send>;

/// Starts watching `marker` for the value `revision` (the grant's key's create
/// revision), until `alive` closes (the grant ended).
pub(super) fn watch_marker(
    shared: &Arc<Shared>,
    marker: String,
    key: String,
    revision: i64,
    mut alive: watch::Receiver<()>,
    on_asked: OnAsked,
) -> watch::Receiver<Seen> {
    let (seen, receiver) = watch::channel(Seen::Unknown);
    let task_shared = shared.clone();
    shared.runtime.spawn(async move {
        tokio::select! {
            // Never sent to: this is the grant ending.
            _ = alive.changed() => {}
            () = follow(&task_shared, &marker, &key, revision, &seen, on_asked) => {}
        }
    });
    receiver
}

/// Watches the marker from now, reads it, then waits until it names
/// `revision`.
async fn follow(
    shared: &Arc<Shared>,
    marker: &str,
    key: &str,
    revision: i64,
    seen: &watch::Sender<Seen>,
    on_asked: OnAsked,
) {
    let expected = revision.to_string().into_bytes();
    let asked = |value: &[u8]| value == expected.as_slice();
    let Ok(client) = shared.leases.client().await else {
        return;
    };
    // A confirmed watch from now, then a read (see `watch`: a watch from the
    // read's revision could see the marker 100 ms late).
    loop {
        let Ok(mut stream) = confirmed(&client, marker, false).await else {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        let Ok(read) = client.clone().get(marker, None).await else {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        if read.kvs().first().is_some_and(|kv| asked(kv.value())) {
            break;
        }
        seen.send_replace(Seen::NotAsked);
        let mut found = false;
        while let Ok(Some(answer)) = stream.message().await {
            found = answer.events().iter().any(|e| {
                e.event_type() == EventType::Put && e.kv().is_some_and(|kv| asked(kv.value()))
            });
            if found {
                break;
            }
        }
        if found {
            break;
        }
    }
    on_asked(key);
    seen.send_replace(Seen::Asked);
}
