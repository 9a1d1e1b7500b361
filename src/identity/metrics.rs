//! What the resource server counts for `/metrics`: tokens accepted and refused (by reason, never
//! by token or subject), key fetches per issuer, and introspection calls and cache hits. Plain
//! atomics: a token check adds one increment.

use std::sync::atomic::{AtomicU64, Ordering};

use super::rejection::Reason;

/// Counters of one [`super::Verifier`].
#[derive(Default)]
pub struct Metrics {
    accepted: AtomicU64,
    refused: [AtomicU64; Reason::ALL.len()],
    unavailable: AtomicU64,
}

/// Counters of one issuer's key fetches.
#[derive(Default)]
pub struct FetchCounts {
    /// Fetches that replaced the key set.
    pub ok: AtomicU64,
    /// Fetches that failed (the set held was kept).
    pub failed: AtomicU64,
    /// Keys in the set now.
    pub keys: AtomicU64,
}

/// Counters of the introspection of opaque tokens.
#[derive(Default)]
pub struct IntrospectionCounts {
    /// Calls the issuer answered with an active token for this host.
    pub active: AtomicU64,
    /// Calls whose answer refused the token (inactive, another audience, …).
    pub refused: AtomicU64,
    /// Calls that got no usable answer (unreachable, timed out, an error status).
    pub unreachable: AtomicU64,
    /// Tokens answered from the kept answers or the refusals remembered, without a call.
    pub cache_hits: AtomicU64,
    /// Tokens refused without a call because their client address asked too often.
    pub throttled: AtomicU64,
}

impl IntrospectionCounts {
    /// Prometheus text for these counters, for `issuer`, and the `kept` answers.
    pub fn render(&self, issuer: &str, kept: usize) -> String {
        let issuer = issuer.replace('\\', "\\\\").replace('"', "\\\"");
        let mut text = String::from(
            "# HELP corral_oauth_introspections_total Calls to the introspection endpoint, by outcome.\n# TYPE corral_oauth_introspections_total counter\n",
        );
        for (outcome, count) in [("active", &self.active), ("refused", &self.refused), ("unreachable", &self.unreachable)] {
            text.push_str(&format!("corral_oauth_introspections_total{{issuer=\"{issuer}\",outcome=\"{outcome}\"}} {}\n", count.load(Ordering::Relaxed)));
        }
        text.push_str("# HELP corral_oauth_introspection_cache_hits_total Opaque tokens answered from kept introspection answers.\n# TYPE corral_oauth_introspection_cache_hits_total counter\n");
        text.push_str(&format!("corral_oauth_introspection_cache_hits_total{{issuer=\"{issuer}\"}} {}\n", self.cache_hits.load(Ordering::Relaxed)));
        text.push_str("# HELP corral_oauth_introspections_throttled_total Opaque tokens refused (429) because their client address caused too many introspections.\n# TYPE corral_oauth_introspections_throttled_total counter\n");
        text.push_str(&format!("corral_oauth_introspections_throttled_total{{issuer=\"{issuer}\"}} {}\n", self.throttled.load(Ordering::Relaxed)));
        text.push_str("# HELP corral_oauth_introspection_answers Introspection answers kept now.\n# TYPE corral_oauth_introspection_answers gauge\n");
        text.push_str(&format!("corral_oauth_introspection_answers{{issuer=\"{issuer}\"}} {kept}\n"));
        text
    }
}

impl Metrics {
    /// Counts a token accepted.
    pub fn accepted(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a token refused for `reason`.
    pub fn refused(&self, reason: Reason) {
        self.refused[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a token whose issuer's keys could not be had.
    pub fn unavailable(&self) {
        self.unavailable.fetch_add(1, Ordering::Relaxed);
    }

    /// Prometheus text for these counters and each issuer's fetches.
    pub fn render<'a>(&self, issuers: impl Iterator<Item = (&'a str, &'a FetchCounts)>) -> String {
        let mut text = String::from("# HELP corral_oauth_tokens_total OAuth access tokens checked, by outcome.\n# TYPE corral_oauth_tokens_total counter\n");
        text.push_str(&format!("corral_oauth_tokens_total{{outcome=\"accepted\"}} {}\n", self.accepted.load(Ordering::Relaxed)));
        for reason in Reason::ALL {
            text.push_str(&format!("corral_oauth_tokens_total{{outcome=\"{}\"}} {}\n", reason.as_str(), self.refused[reason as usize].load(Ordering::Relaxed)));
        }
        text.push_str(&format!("corral_oauth_tokens_total{{outcome=\"issuer-unavailable\"}} {}\n", self.unavailable.load(Ordering::Relaxed)));
        text.push_str("# HELP corral_oauth_key_fetches_total Fetches of an issuer's metadata and signing keys, by outcome.\n# TYPE corral_oauth_key_fetches_total counter\n");
        let mut keys = String::from("# HELP corral_oauth_keys Signing keys held per issuer.\n# TYPE corral_oauth_keys gauge\n");
        for (issuer, counts) in issuers {
            let issuer = issuer.replace('\\', "\\\\").replace('"', "\\\"");
            text.push_str(&format!("corral_oauth_key_fetches_total{{issuer=\"{issuer}\",outcome=\"ok\"}} {}\n", counts.ok.load(Ordering::Relaxed)));
            text.push_str(&format!("corral_oauth_key_fetches_total{{issuer=\"{issuer}\",outcome=\"failed\"}} {}\n", counts.failed.load(Ordering::Relaxed)));
            keys.push_str(&format!("corral_oauth_keys{{issuer=\"{issuer}\"}} {}\n", counts.keys.load(Ordering::Relaxed)));
        }
        text + &keys
    }
}
