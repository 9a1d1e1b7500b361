//! The links that send a person to give a caller secret (URL-mode elicitation): single-use,
//! short-lived, and bound to one principal, one plugin and one secret name.
//!
//! A call that needs a caller secret its caller has not set mints one; the client shows it to the
//! person (MCP 2025-11-25: the `-32042` error's `data.elicitations`), and the page that stores the
//! value takes it back exactly once, for the same principal only. The link carries nothing but
//! a random id (no credential, no name of anyone): what it stands for stays here. It lives in the
//! host that minted it, so behind several replicas the page must reach that replica.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::holder::Holder;

/// How long a link stays good: time to read the page, sign in and paste a token.
pub const LINK_TTL: Duration = Duration::from_secs(10 * 60);

/// Links alive at once; past it the oldest are dropped first, so a caller who retries in a loop
/// cannot grow the table without bound.
const MAX_LINKS: usize = 10_000;

/// What one link asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkTarget {
    /// Whose secret it is: the page must be completed by this same principal.
    pub holder: Holder,
    /// The plugin that declares it.
    pub plugin: String,
    /// The secret's name.
    pub name: String,
}

/// A minted link: its id (the URL's last segment, and the elicitation's id) and when it expires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// 32 random bytes as hex.
    pub id: String,
    /// How long it stays good from now.
    pub ttl: Duration,
}

/// Why a link was refused; each says what the person can do.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkRefused {
    /// Never minted here (mistyped, or minted by another host or before a restart).
    #[error("this link is not known here: call the tool again for a new one")]
    Unknown,
    /// Past its time.
    #[error("this link has expired: call the tool again for a new one")]
    Expired,
    /// Already used once.
    #[error("this link was already used: call the tool again for a new one")]
    Used,
    /// Opened by someone other than the principal it was made for.
    #[error("this link was made for someone else: sign in as the caller who was asked")]
    OtherPrincipal,
}

struct Entry {
    target: LinkTarget,
    expires: Instant,
    used: bool,
    minted: u64,
}

/// The links of one host.
pub struct ConnectLinks {
    ttl: Duration,
    entries: Mutex<(HashMap<String, Entry>, u64)>,
}

impl Default for ConnectLinks {
    fn default() -> ConnectLinks {
        ConnectLinks::new(LINK_TTL)
    }
}

impl ConnectLinks {
    /// Links good for `ttl` each.
    pub fn new(ttl: Duration) -> ConnectLinks {
        ConnectLinks { ttl, entries: Mutex::new((HashMap::new(), 0)) }
    }

    /// A new link for `target`. At the bound, expired links go first, then the oldest.
    pub fn mint(&self, target: LinkTarget) -> Link {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the system's random source works");
        let id = hex::encode(bytes);
        let now = Instant::now();
        let mut guard = self.entries.lock().unwrap();
        let (entries, counter) = &mut *guard;
        if entries.len() >= MAX_LINKS {
            entries.retain(|_, e| e.expires > now);
        }
        if entries.len() >= MAX_LINKS {
            let oldest = entries.iter().min_by_key(|(_, e)| e.minted).map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                entries.remove(&oldest);
            }
        }
        *counter += 1;
        entries.insert(id.clone(), Entry { target, expires: now + self.ttl, used: false, minted: *counter });
        Link { id, ttl: self.ttl }
    }

    /// What link `id` asks for, if `holder` may use it now; it cannot be used again after.
    pub fn take(&self, id: &str, holder: &Holder) -> Result<LinkTarget, LinkRefused> {
        let now = Instant::now();
        let mut guard = self.entries.lock().unwrap();
        let entry = guard.0.get_mut(id).ok_or(LinkRefused::Unknown)?;
        if entry.expires <= now {
            return Err(LinkRefused::Expired);
        }
        if entry.used {
            return Err(LinkRefused::Used);
        }
        if &entry.target.holder != holder {
            return Err(LinkRefused::OtherPrincipal);
        }
        entry.used = true;
        Ok(entry.target.clone())
    }

    /// What link `id` asks for, without using it (the page shows it before the person signs in);
    /// `None` for a link that could no longer be taken.
    pub fn peek(&self, id: &str) -> Option<LinkTarget> {
        let guard = self.entries.lock().unwrap();
        guard.0.get(id).filter(|e| !e.used && e.expires > Instant::now()).map(|e| e.target.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(holder: &str) -> LinkTarget {
        LinkTarget { holder: holder.parse().unwrap(), plugin: "tracker".into(), name: "TRACKER_TOKEN".into() }
    }

    #[tokio::test(start_paused = true)]
    async fn a_link_is_taken_once_by_its_own_principal_before_it_expires() {
        let links = ConnectLinks::new(Duration::from_secs(600));
        let (ada, bob) = ("token:ada".parse::<Holder>().unwrap(), "token:bob".parse::<Holder>().unwrap());
        let link = links.mint(target("token:ada"));
        assert_eq!(link.id.len(), 64);
        assert_ne!(links.mint(target("token:ada")).id, link.id, "every link is new");
        assert_eq!(links.peek(&link.id), Some(target("token:ada")));
        assert_eq!(links.take(&link.id, &bob), Err(LinkRefused::OtherPrincipal));
        assert_eq!(links.take("0".repeat(64).as_str(), &ada), Err(LinkRefused::Unknown));
        assert_eq!(links.take(&link.id, &ada), Ok(target("token:ada")), "another's attempt did not spend it");
        assert_eq!(links.take(&link.id, &ada), Err(LinkRefused::Used));
        assert_eq!(links.peek(&link.id), None);

        let late = links.mint(target("token:ada"));
        tokio::time::advance(Duration::from_secs(599)).await;
        assert!(links.peek(&late.id).is_some());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(links.take(&late.id, &ada), Err(LinkRefused::Expired));
        assert_eq!(links.peek(&late.id), None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_is_bounded_and_drops_the_oldest_first() {
        let links = ConnectLinks::new(Duration::from_secs(600));
        let first = links.mint(target("token:ada"));
        let second = links.mint(target("token:ada"));
        for _ in 2..MAX_LINKS {
            links.mint(target("token:bob"));
        }
        assert!(links.peek(&first.id).is_some());
        links.mint(target("token:bob"));
        assert_eq!(links.take(&first.id, &"token:ada".parse().unwrap()), Err(LinkRefused::Unknown), "the oldest went");
        assert!(links.peek(&second.id).is_some());

        // Expired links go before any live one.
        tokio::time::advance(Duration::from_secs(600)).await;
        let fresh = links.mint(target("token:ada"));
        for _ in 0..10 {
            links.mint(target("token:bob"));
        }
        assert!(links.peek(&fresh.id).is_some(), "the sweep made room for many");
    }
}
