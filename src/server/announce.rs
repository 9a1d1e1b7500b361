//! What a host tells its sessions on its own: that the catalog's lists changed (hot reload), and
//! that a resource a plugin says changed was updated, to the subscribers the policy lets read it.

use std::sync::Arc;

use super::host::Host;
use super::sessions::ListChanged;
use crate::principal::Owner;

/// For as long as the host lives: tells every session when the catalog's tools, resources or
/// prompts change (hot reload), and the subscribed sessions when a plugin says one of its
/// resources changed.
pub fn announce_changes(host: &Arc<Host>) {
    let mut changes = host.registry.subscribe();
    let mut seen = host.registry.snapshot();
    let weak = Arc::downgrade(host);
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let Some(host) = weak.upgrade() else { return };
            let generation = *changes.borrow_and_update();
            let now = host.registry.snapshot();
            let changed = now.changes_from(&seen);
            seen = now;
            // The plugins loaded at start are news to nobody (requests waited for them).
            if host.registry.is_first_load(generation) {
                continue;
            }
            for (kind, yes) in [("tools", changed.tools), ("resources", changed.resources), ("prompts", changed.prompts)] {
                if yes {
                    let sent = host.sessions.broadcast(&ListChanged::new(kind));
                    tracing::info!(sessions = sent, "told clients the {kind} list changed");
                }
            }
        }
    });
    let mut updates = host.runtime.resource_updates();
    let weak = Arc::downgrade(host);
    tokio::spawn(async move {
        loop {
            let update = match updates.recv().await {
                Ok(update) => update,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("{n} resource updates came too fast and were dropped");
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let Some(host) = weak.upgrade() else { return };
            // A plugin speaks for its own resources only.
            let catalog = host.registry.snapshot();
            // Subscriptions hold canonical URIs: a plugin may announce any spelling of one.
            let update = crate::runtime::ResourceUpdate { uri: crate::uri::canonical(&update.uri).unwrap_or(update.uri), ..update };
            match catalog.resource_owner(&update.uri) {
                Some(plugin) if *plugin.name == *update.plugin => {
                    // Only to those who may read it now, whatever the policy was when they subscribed.
                    let may_hear = |owner: &Owner| super::authorize::may_read(&host, owner.principal(), &plugin.name, &update.uri);
                    let sent = host.sessions.resource_updated(&update.uri, &may_hear);
                    tracing::debug!(plugin = %update.plugin, uri = %update.uri, sessions = sent, "resource updated");
                }
                _ => tracing::warn!(plugin = %update.plugin, uri = %update.uri, "ignored resource-updated: the URI is not one of the plugin's resources"),
            }
        }
    });
}
