//! Noticing a contender of another client behind this host's node: one child
//! watch on the lock's directory, held only by the holding host.

use std::sync::Arc;

use zookeeper_client::EventType;

use super::Dialect;
use super::connection::ZkSession;
use crate::connection::retry;
use crate::recipe::queue::queue;
use wardlock_backend::Mode;

/// Resolves when a contender of another client that conflicts with our node
/// (`mode`) is in `parent`'s queue. Never resolves if the session ends (the
/// task learns that from the session itself).
pub(super) async fn remote_contender(
    session: Arc<ZkSession>,
    parent: String,
    ours: String,
    mode: Mode,
    dialect: Dialect,
) {
    let ours = ours.rsplit('/').next().unwrap_or_default().to_owned();
    loop {
        let (children, watcher) = match session.client.list_and_watch_children(&parent).await {
            Ok(listed) => listed,
            Err(error) => match retry::after(&session, error).await {
                Ok(true) => continue,
                _ => return std::future::pending().await,
            },
        };
        let remote = queue(dialect, &children)
            .iter()
            .any(|c| c.node != ours && (mode == Mode::Exclusive || c.exclusive));
        if remote {
            return;
        }
        let event = watcher.changed().await;
        if event.event_type == EventType::Session && event.session_state.is_terminated() {
            return std::future::pending().await;
        }
    }
}
