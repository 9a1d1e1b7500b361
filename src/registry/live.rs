//! The registry the host serves from: the current [`Catalog`], replaced whole by a reload, and
//! the first load's progress that requests wait on.

use std::sync::{Arc, RwLock};

use super::catalog::Catalog;

/// The current catalog, replaceable as a whole.
pub struct Registry {
    current: RwLock<Arc<Catalog>>,
    /// While the first load goes on: what lists show ([`Registry::listing`]).
    listed: RwLock<Option<Arc<Catalog>>>,
    /// Counts replacements, so that the server can tell sessions the tool list changed.
    generation: tokio::sync::watch::Sender<u64>,
    /// Whether the first load is done: `false` only between [`Registry::loading`] and
    /// [`Registry::finish_loading`], while the host already answers `initialize` and `ping`.
    loaded: tokio::sync::watch::Sender<bool>,
    /// Bumped each time the first load serves more of its plugins ([`Registry::serve_partly`],
    /// and its end), so that a request waiting for one tool wakes when that tool's plugin is in.
    arrivals: tokio::sync::watch::Sender<u64>,
    /// How long a request that needs the catalog waits for the first load.
    load_wait: std::time::Duration,
    /// Set when a request stopped waiting before the first load finished: it saw part of the
    /// catalog, so the sessions are told the lists changed once the rest arrives.
    waited_out: std::sync::atomic::AtomicBool,
    /// The generation [`Registry::finish_loading`] made (0: none yet, or never loading).
    first_load: std::sync::atomic::AtomicU64,
}

impl Registry {
    /// A registry serving `catalog`.
    pub fn new(catalog: Catalog) -> Registry {
        Registry::with_state(catalog, true, std::time::Duration::ZERO)
    }

    /// A registry whose plugins are still loading: empty until [`Registry::finish_loading`].
    /// Requests that read the catalog wait for that up to `load_wait` ([`Registry::wait_loaded`]).
    pub fn loading(load_wait: std::time::Duration) -> Registry {
        Registry::with_state(Catalog::default(), false, load_wait)
    }

    fn with_state(catalog: Catalog, loaded: bool, load_wait: std::time::Duration) -> Registry {
        Registry {
            current: RwLock::new(Arc::new(catalog)),
            listed: RwLock::new(None),
            generation: tokio::sync::watch::Sender::new(0),
            loaded: tokio::sync::watch::Sender::new(loaded),
            arrivals: tokio::sync::watch::Sender::new(0),
            load_wait,
            waited_out: std::sync::atomic::AtomicBool::new(false),
            first_load: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The catalog now; a call keeps it to its end, whatever replaces it meanwhile.
    pub fn snapshot(&self) -> Arc<Catalog> {
        self.current.read().unwrap().clone()
    }

    /// The catalog a list shows: [`Registry::snapshot`], except during the first load, when it
    /// is the part of the load that is final (see [`Registry::serve_partly`]).
    pub fn listing(&self) -> Arc<Catalog> {
        match &*self.listed.read().unwrap() {
            Some(final_part) => final_part.clone(),
            None => self.snapshot(),
        }
    }

    /// Swaps in `catalog`. Calls already running keep the plugin version they started with.
    pub fn replace(&self, catalog: Catalog) {
        *self.current.write().unwrap() = Arc::new(catalog);
        self.generation.send_modify(|g| *g += 1);
    }

    /// Swaps in `catalog` without waking subscribers: the tools served are the same.
    pub fn replace_quietly(&self, catalog: Catalog) {
        *self.current.write().unwrap() = Arc::new(catalog);
    }

    /// Wakes on every [`Registry::replace`].
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Serves the plugins of the first load that are ready while others still load, and wakes
    /// the requests waiting for one of them ([`Registry::wait_for`]). Subscribers are not woken:
    /// lists wait for the whole load, so nobody has been told anything yet.
    ///
    /// `ready` has every plugin ready; `final_part` only those before the first one still
    /// loading (in file-name order), which is what the end of the load cannot change: a name
    /// two plugins claim goes to the first in file order, which may be one still loading. A
    /// call finds a tool in `ready`; a list that stopped waiting shows `final_part`, so that
    /// no client is shown a tool that the end of the load then gives to another plugin.
    pub fn serve_partly(&self, ready: Catalog, final_part: Catalog) {
        *self.listed.write().unwrap() = Some(Arc::new(final_part));
        *self.current.write().unwrap() = Arc::new(ready);
        self.arrivals.send_modify(|n| *n += 1);
    }

    /// Serves the first load's catalog and wakes every request waiting for it. Subscribers are
    /// woken too, but [`Registry::is_first_load`] tells them this replacement is news to no one
    /// (unless [`Registry::waited_out`]).
    pub fn finish_loading(&self, catalog: Catalog) {
        *self.current.write().unwrap() = Arc::new(catalog);
        *self.listed.write().unwrap() = None;
        self.generation.send_modify(|g| {
            *g += 1;
            self.first_load.store(*g, std::sync::atomic::Ordering::SeqCst);
        });
        self.loaded.send_replace(true);
        self.arrivals.send_modify(|n| *n += 1);
    }

    /// Whether `generation` (a value of [`Registry::subscribe`]) is the first load's catalog,
    /// which no client has been told anything about unless one stopped waiting for it.
    pub fn is_first_load(&self, generation: u64) -> bool {
        generation == self.first_load.load(std::sync::atomic::Ordering::SeqCst) && !self.waited_out()
    }

    /// Whether the first load is done (always, for a registry made with [`Registry::new`]).
    pub fn is_loaded(&self) -> bool {
        *self.loaded.borrow()
    }

    /// Waits until the first load is done, however long it takes.
    pub async fn loaded(&self) {
        let mut loaded = self.loaded.subscribe();
        // The sender lives as long as `self`, so this only returns once the flag is set.
        let _ = loaded.wait_for(|done| *done).await;
    }

    /// Waits for the first load, at most the registry's `load_wait`; `false` if it gave up
    /// (and then [`Registry::waited_out`] is set).
    pub async fn wait_loaded(&self) -> bool {
        if self.is_loaded() {
            return true;
        }
        match tokio::time::timeout(self.load_wait, self.loaded()).await {
            Ok(()) => true,
            Err(_) => {
                self.waited_out.store(true, std::sync::atomic::Ordering::SeqCst);
                false
            }
        }
    }

    /// Waits until the catalog serves what `ready` looks for, or the first load is done, however
    /// long it takes: a task recovered at start needs its own plugin, not all of them.
    pub async fn serving(&self, ready: impl Fn(&Catalog) -> bool) {
        // Subscribed before the first look, so an arrival between the look and the wait wakes it.
        let mut arrivals = self.arrivals.subscribe();
        while !self.is_loaded() && !ready(&self.snapshot()) {
            // The sender lives as long as `self`.
            let _ = arrivals.changed().await;
        }
    }

    /// [`Registry::serving`], at most the registry's `load_wait`: a call of a tool whose plugin
    /// has loaded goes on at once, whatever else still loads. `false` if it gave up (and then
    /// [`Registry::waited_out`] is set).
    pub async fn wait_for(&self, ready: impl Fn(&Catalog) -> bool) -> bool {
        if self.is_loaded() || ready(&self.snapshot()) {
            return true;
        }
        match tokio::time::timeout(self.load_wait, self.serving(ready)).await {
            Ok(()) => true,
            Err(_) => {
                self.waited_out.store(true, std::sync::atomic::Ordering::SeqCst);
                false
            }
        }
    }

    /// Whether a request was answered from a partial catalog during the first load.
    pub fn waited_out(&self) -> bool {
        self.waited_out.load(std::sync::atomic::Ordering::SeqCst)
    }
}
