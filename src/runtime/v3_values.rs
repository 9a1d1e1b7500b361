//! 0.3.0's values as the host's (0.2.0's) and back.
//!
//! 0.3.0 repeats 0.2.0's `host` and exports word for word, but under its own versioned names, so
//! wasmtime generates distinct Rust types for them; the host works in 0.2.0's types and converts
//! at the boundary, field by field (the compiler checks that none is forgotten).

use super::bindings::{v2, v3};
use super::input::{InputRequest, InputResponse};

mod host2 {
    pub use crate::runtime::bindings::v2::corral::plugin::host::*;
}
mod host3 {
    pub use crate::runtime::bindings::v3::corral::plugin::host::*;
}
use v2::exports::corral::plugin as ex2;
use v3::exports::corral::plugin as ex3;

impl From<host3::LogLevel> for super::LogLevel {
    fn from(level: host3::LogLevel) -> super::LogLevel {
        match level {
            host3::LogLevel::Debug => super::LogLevel::Debug,
            host3::LogLevel::Info => super::LogLevel::Info,
            host3::LogLevel::Notice => super::LogLevel::Notice,
            host3::LogLevel::Warning => super::LogLevel::Warning,
            host3::LogLevel::Error => super::LogLevel::Error,
        }
    }
}

impl From<host3::SamplingRequest> for host2::SamplingRequest {
    fn from(r: host3::SamplingRequest) -> host2::SamplingRequest {
        host2::SamplingRequest {
            messages: r.messages,
            system_prompt: r.system_prompt,
            max_tokens: r.max_tokens,
            temperature: r.temperature,
            stop_sequences: r.stop_sequences,
            model_preferences: r.model_preferences.map(|p| host2::ModelPreferences {
                hints: p.hints,
                cost_priority: p.cost_priority,
                speed_priority: p.speed_priority,
                intelligence_priority: p.intelligence_priority,
            }),
        }
    }
}

impl From<host2::SamplingResponse> for host3::SamplingResponse {
    fn from(r: host2::SamplingResponse) -> host3::SamplingResponse {
        host3::SamplingResponse { role: r.role, content: r.content, model: r.model, stop_reason: r.stop_reason }
    }
}

impl From<host2::ElicitResponse> for host3::ElicitResponse {
    fn from(r: host2::ElicitResponse) -> host3::ElicitResponse {
        let action = match r.action {
            host2::ElicitAction::Accept => host3::ElicitAction::Accept,
            host2::ElicitAction::Decline => host3::ElicitAction::Decline,
            host2::ElicitAction::Cancel => host3::ElicitAction::Cancel,
        };
        host3::ElicitResponse { action, content: r.content }
    }
}

impl From<host2::RequestError> for host3::RequestError {
    fn from(e: host2::RequestError) -> host3::RequestError {
        match e {
            host2::RequestError::Unsupported(s) => host3::RequestError::Unsupported(s),
            host2::RequestError::Invalid(s) => host3::RequestError::Invalid(s),
            host2::RequestError::Refused(s) => host3::RequestError::Refused(s),
            host2::RequestError::Unavailable(s) => host3::RequestError::Unavailable(s),
        }
    }
}

/// 0.3.0's `input-request`.
pub(crate) fn input_request(r: v3::corral::plugin::input::InputRequest) -> InputRequest {
    use v3::corral::plugin::input::InputRequest as R;
    match r {
        R::Elicit(e) => InputRequest::Elicit { message: e.message, requested_schema: e.requested_schema },
        R::Sample(s) => InputRequest::Sample(s.into()),
        R::ListRoots => InputRequest::ListRoots,
    }
}

/// 0.3.0's `input-response`.
pub(crate) fn input_response(r: InputResponse) -> v3::corral::plugin::input::InputResponse {
    use v3::corral::plugin::input::InputResponse as R;
    match r {
        InputResponse::Elicit(e) => R::Elicit(e.into()),
        InputResponse::Sample(s) => R::Sample(s.into()),
        InputResponse::Roots(roots) => R::Roots(roots),
    }
}

impl From<ex3::resources::Resource> for ex2::resources::Resource {
    fn from(r: ex3::resources::Resource) -> ex2::resources::Resource {
        ex2::resources::Resource { uri: r.uri, name: r.name, title: r.title, description: r.description, mime_type: r.mime_type, size: r.size }
    }
}

impl From<ex3::resources::ResourceTemplate> for ex2::resources::ResourceTemplate {
    fn from(t: ex3::resources::ResourceTemplate) -> ex2::resources::ResourceTemplate {
        ex2::resources::ResourceTemplate { uri_template: t.uri_template, name: t.name, title: t.title, description: t.description, mime_type: t.mime_type }
    }
}

impl From<ex3::resources::Contents> for ex2::resources::Contents {
    fn from(c: ex3::resources::Contents) -> ex2::resources::Contents {
        ex2::resources::Contents { uri: c.uri, mime_type: c.mime_type, body: c.body }
    }
}

impl From<ex3::resources::ReadError> for ex2::resources::ReadError {
    fn from(e: ex3::resources::ReadError) -> ex2::resources::ReadError {
        match e {
            ex3::resources::ReadError::NotFound => ex2::resources::ReadError::NotFound,
            ex3::resources::ReadError::Failed(s) => ex2::resources::ReadError::Failed(s),
        }
    }
}

impl From<ex3::prompts::Prompt> for ex2::prompts::Prompt {
    fn from(p: ex3::prompts::Prompt) -> ex2::prompts::Prompt {
        let arguments = p
            .arguments
            .into_iter()
            .map(|a| ex2::prompts::PromptArgument { name: a.name, title: a.title, description: a.description, required: a.required })
            .collect();
        ex2::prompts::Prompt { name: p.name, title: p.title, description: p.description, arguments }
    }
}

impl From<ex3::prompts::PromptResult> for ex2::prompts::PromptResult {
    fn from(r: ex3::prompts::PromptResult) -> ex2::prompts::PromptResult {
        ex2::prompts::PromptResult { description: r.description, messages: r.messages }
    }
}

impl From<ex3::prompts::PromptError> for ex2::prompts::PromptError {
    fn from(e: ex3::prompts::PromptError) -> ex2::prompts::PromptError {
        match e {
            ex3::prompts::PromptError::InvalidArguments(s) => ex2::prompts::PromptError::InvalidArguments(s),
            ex3::prompts::PromptError::Failed(s) => ex2::prompts::PromptError::Failed(s),
        }
    }
}

/// 0.2.0's completion reference as 0.3.0's, for calling a 0.3.0 plugin's `complete`.
pub(crate) fn reference(r: &ex2::completions::Reference) -> ex3::completions::Reference {
    match r {
        ex2::completions::Reference::Prompt(s) => ex3::completions::Reference::Prompt(s.clone()),
        ex2::completions::Reference::ResourceTemplate(s) => ex3::completions::Reference::ResourceTemplate(s.clone()),
    }
}

impl From<ex3::completions::Completion> for ex2::completions::Completion {
    fn from(c: ex3::completions::Completion) -> ex2::completions::Completion {
        ex2::completions::Completion { values: c.values, total: c.total, has_more: c.has_more }
    }
}
