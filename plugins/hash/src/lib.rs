//! `hash`: a CPU-heavy tool, and how limits apply to it.
//!
//! Shows how to
//! - use an ordinary crate (`sha2`) inside a plugin,
//! - return structured output with a text of its own (`(String, Json<T>)`),
//! - stay responsive in a long loop by checking `cancelled()` now and then,
//! - give a plugin its own limits with a manifest: `hash.toml` next to `hash.wasm`
//!   sets its fuel budget and timeout, so a large `rounds` runs out of fuel
//!   (a deterministic compute budget) instead of hogging a CPU.

use corral_plugin::{cancelled, export, Json, TaskSupport, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct HashArgs {
    /// The text to hash.
    input: String,
    /// How many times to apply SHA-256, each round hashing the previous digest.
    #[schemars(range(min = 1, max = 100_000_000))]
    rounds: u64,
}

#[derive(Serialize, JsonSchema)]
struct HashOutput {
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    digest: String,
    rounds: u64,
}

fn hash_chain(HashArgs { input, rounds }: HashArgs) -> Result<(String, Json<HashOutput>), String> {
    if !(1..=100_000_000).contains(&rounds) {
        return Err("needs `input` (a string) and `rounds` (an integer from 1 to 100000000)".into());
    }
    let mut digest = Sha256::digest(input.as_bytes());
    for round in 1..rounds {
        // A host call costs far more than one hash, so ask only every 64k rounds.
        if round % 65_536 == 0 && cancelled() {
            return Err(format!("cancelled after {round} of {rounds} rounds"));
        }
        digest = Sha256::digest(digest);
    }
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    // The model reads the digest; programs read the structured output.
    Ok((hex.clone(), Json(HashOutput { digest: hex, rounds })))
}

fn tools() -> Vec<Tool> {
    vec![Tool::new("hash_chain", "Applies SHA-256 `rounds` times, starting from `input`, and returns the final digest in hex.", hash_chain)
        .title("SHA-256 hash chain")
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
        .task_support(TaskSupport::Optional)]
}

export!(tools);

#[cfg(test)]
mod tests {
    use corral_plugin::testing;
    use serde_json::json;

    #[test]
    fn tools_pass_the_hosts_checks() {
        testing::check(&super::tools());
    }

    #[test]
    fn one_round_is_plain_sha256() {
        let result = testing::call(&super::tools(), "hash_chain", json!({"input": "abc", "rounds": 1}));
        let digest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(result.text_content(), digest);
        assert_eq!(result.structured_value(), Some(json!({"digest": digest, "rounds": 1})));
    }

    #[test]
    fn cancellation_is_checked_every_65536_rounds() {
        testing::cancel_after(0);
        let result = testing::call(&super::tools(), "hash_chain", json!({"input": "x", "rounds": 70_000}));
        assert!(result.is_error);
        assert_eq!(result.text_content(), "cancelled after 65536 of 70000 rounds");
    }
}
