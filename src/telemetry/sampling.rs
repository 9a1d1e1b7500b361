//! Which traces are kept: `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`, as the
//! OpenTelemetry SDKs read them (`parentbased_always_on` when unset).
//!
//! A span with a parent in this process takes its parent's decision, so a trace is kept or
//! dropped whole; one whose parent came from a caller follows the caller's `sampled` flag under
//! the `parentbased_*` samplers; a root (or, without `parentbased_`, every span from a caller)
//! asks the root sampler. The trace-id ratio is the SDK's own sampler.

use anyhow::bail;
use opentelemetry::trace::{SpanContext, SpanKind, TraceId};
use opentelemetry_sdk::trace::{Sampler, SamplingDecision, ShouldSample};

use super::vars::Vars;

/// The configured sampler.
#[derive(Clone, Debug)]
pub struct Sampling {
    /// Whether a caller's decision is followed.
    parent_based: bool,
    root: Root,
}

#[derive(Clone, Debug)]
enum Root {
    Always,
    Never,
    Ratio(Sampler),
}

impl Sampling {
    /// The sampler `OTEL_TRACES_SAMPLER` names, with `OTEL_TRACES_SAMPLER_ARG` as the ratio of
    /// the `traceidratio` ones (1.0 when unset). A name corral does not know is refused: a typo
    /// would otherwise keep every trace or none without a word.
    pub fn read(vars: &Vars<'_>) -> anyhow::Result<Sampling> {
        let var = |name: &str| vars.get(name);
        let name = var("OTEL_TRACES_SAMPLER").unwrap_or_else(|| "parentbased_always_on".into());
        let ratio = || -> anyhow::Result<Root> {
            let ratio = match var("OTEL_TRACES_SAMPLER_ARG") {
                None => 1.0,
                Some(arg) => match arg.parse::<f64>() {
                    Ok(ratio) if (0.0..=1.0).contains(&ratio) => ratio,
                    _ => bail!("OTEL_TRACES_SAMPLER_ARG={arg}: the ratio must be a number from 0 to 1"),
                },
            };
            Ok(Root::Ratio(Sampler::TraceIdRatioBased(ratio)))
        };
        let (parent_based, root) = match name.as_str() {
            "always_on" => (false, Root::Always),
            "always_off" => (false, Root::Never),
            "traceidratio" => (false, ratio()?),
            "parentbased_always_on" => (true, Root::Always),
            "parentbased_always_off" => (true, Root::Never),
            "parentbased_traceidratio" => (true, ratio()?),
            other => bail!(
                "OTEL_TRACES_SAMPLER={other}: corral knows always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off and parentbased_traceidratio"
            ),
        };
        Ok(Sampling { parent_based, root })
    }

    /// Whether a new span of trace `trace_id` is kept, given its caller's context when it came
    /// from another process.
    pub fn sampled(&self, remote_parent: Option<&SpanContext>, trace_id: TraceId) -> bool {
        if let Some(parent) = remote_parent.filter(|_| self.parent_based) {
            return parent.is_sampled();
        }
        match &self.root {
            Root::Always => true,
            Root::Never => false,
            Root::Ratio(sampler) => sampler.should_sample(None, trace_id, "", &SpanKind::Server, &[], &[]).decision == SamplingDecision::RecordAndSample,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanId, TraceFlags, TraceState};

    fn caller(sampled: bool) -> SpanContext {
        let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
        SpanContext::new(TraceId::from(1u128), SpanId::from(1u64), flags, true, TraceState::default())
    }

    #[test]
    fn parent_based_samplers_follow_the_caller_and_the_others_do_not() {
        let parent_based = Sampling { parent_based: true, root: Root::Never };
        assert!(parent_based.sampled(Some(&caller(true)), TraceId::from(5u128)));
        assert!(!parent_based.sampled(None, TraceId::from(5u128)));
        let always = Sampling { parent_based: false, root: Root::Always };
        assert!(always.sampled(Some(&caller(false)), TraceId::from(5u128)));
    }

    #[test]
    fn the_ratio_keeps_about_its_share_of_trace_ids() {
        let half = Sampling { parent_based: false, root: Root::Ratio(Sampler::TraceIdRatioBased(0.5)) };
        let kept = (0..2000u128).filter(|i| half.sampled(None, TraceId::from(i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)))).count();
        assert!((800..1200).contains(&kept), "{kept} of 2000");
    }
}
