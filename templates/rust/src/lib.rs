//! `{{name}}`: a corral plugin on contract `corral:plugin@0.3.0`. Each tool is a plain function;
//! `tools()` lists them.
//!
//! - `{{tool}}` greets: the smallest tool there is.
//! - `{{tool}}_primes` counts primes in chunks as a long task would: progress after each chunk and
//!   a checkpoint, so a task a crash interrupted resumes from its last chunk instead of from zero.
//! - `cargo test` runs the tests below on your machine, no wasm needed (a crash included).
//! - `./build.sh` builds `dist/{{name}}.wasm`; `corral serve --plugins dist --watch` serves it
//!   and reloads it after every build.

use corral_plugin::{checkpoint, export, progress, resume, TaskSupport, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The arguments: their JSON Schema is the tool's input schema, and the doc comments become
/// the descriptions the model reads.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

/// An `Err` becomes an `isError` result: the model reads the text and can try again.
fn greet(args: GreetArgs) -> Result<String, String> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err("`name` is empty: say who to greet".into());
    }
{{secret_reads}}    Ok(format!("Hello, {name}!"))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PrimesArgs {
    /// Count the primes below this number (at most 10000000).
    below: u64,
}

/// How far the count has come: what a checkpoint stores and `resume()` gives back.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Progress {
    /// The first number not looked at yet.
    next: u64,
    /// Primes found below `next`.
    primes: u64,
}

const CHUNK: u64 = 100_000;

/// Each checkpoint is a safe retry boundary: a run after a crash starts from the last one, so
/// everything after it may happen twice. Here that is harmless: the work is pure, and the
/// result is only returned at the end.
fn primes(args: PrimesArgs) -> Result<String, String> {
    if args.below > 10_000_000 {
        return Err(format!("`below` is {}: at most 10000000", args.below));
    }
    let mut at = resume::<Progress>().unwrap_or(Progress { next: 2, primes: 0 });
    while at.next < args.below {
        if corral_plugin::cancelled() {
            return Err(format!("cancelled at {}", at.next));
        }
        let end = (at.next + CHUNK).min(args.below);
        at.primes += (at.next..end).filter(|&n| is_prime(n)).count() as u64;
        at.next = end;
        progress(end as f64, Some(args.below as f64), Some(&format!("{} primes below {end}", at.primes)));
        checkpoint(&at)?;
    }
    Ok(format!("{} primes below {}", at.primes, args.below))
}

fn is_prime(n: u64) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| n % d != 0)
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("{{tool}}", "Greets someone by name.", greet).title("Greet").read_only(true).open_world(false),
        // Idempotent: a task of it that a crash interrupted runs again, from its last checkpoint.
        Tool::new("{{tool}}_primes", "Counts the primes below a number, as a task that can resume after a crash.", primes)
            .title("Count primes")
            .read_only(true)
            .idempotent(true)
            .task_support(TaskSupport::Optional),
    ]
}

export!(tools);

#[cfg(test)]
mod tests {
    use corral_plugin::testing;
    use serde_json::json;

    #[test]
    fn the_host_would_accept_the_tools() {
        testing::check(&super::tools());
    }

    #[test]
    fn greets_by_name() {
        let result = testing::call(&super::tools(), "{{tool}}", json!({"name": "Ada"}));
        assert_eq!(result.text_content(), "Hello, Ada!");
    }

    #[test]
    fn an_empty_name_is_an_error_the_model_can_read() {
        let result = testing::call(&super::tools(), "{{tool}}", json!({"name": " "}));
        assert!(result.is_error);
        assert!(result.text_content().contains("say who to greet"));
    }

    #[test]
    fn counting_reports_progress_and_checkpoints_every_chunk() {
        testing::reset();
        let result = testing::call(&super::tools(), "{{tool}}_primes", json!({"below": 250_000}));
        assert_eq!(result.text_content(), "22044 primes below 250000");
        assert_eq!(testing::progress_reports().len(), 3);
        assert_eq!(testing::checkpoints().len(), 3);
    }

    #[test]
    fn a_run_after_a_crash_resumes_from_the_last_checkpoint() {
        testing::reset();
        testing::crash_after(2); // the host dies right after the second checkpoint
        let crashed = testing::run_until_crash(|| testing::call(&super::tools(), "{{tool}}_primes", json!({"below": 250_000})));
        assert!(crashed.is_none());
        testing::progress_reports();
        let result = testing::call(&super::tools(), "{{tool}}_primes", json!({"below": 250_000}));
        assert_eq!(result.text_content(), "22044 primes below 250000", "the same answer as a clean run");
        assert_eq!(testing::progress_reports().len(), 1, "only the last chunk ran again");
    }
}
