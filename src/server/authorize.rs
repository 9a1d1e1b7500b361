//! The one place a request is authorized, whatever its era and transport: the seam an identity
//! and policy layer fills. Every step of the pipeline that names what it will touch (a tool, a
//! resource, a prompt) passes through [`authorize`] with the request's principal before anything
//! runs. Today it allows whatever a principal can name; what owns a task or a kept result is
//! already enforced by the stores, which read and write only by owner.

use crate::audit::Subject;
use crate::mcp::RpcError;
use crate::principal::Owner;

/// What a request is about to do, named as a policy would name it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Action<'a> {
    /// Call the tool of this name (`tools/call`, as a plain call or a task).
    CallTool(&'a str),
    /// Read the resource at this URI (`resources/read`).
    ReadResource(&'a str),
    /// Render the prompt of this name (`prompts/get`), or complete one of its arguments.
    UsePrompt(&'a str),
    /// Complete an argument of a resource template (`completion/complete`).
    CompleteTemplate(&'a str),
}

impl Action<'_> {
    /// What the action names, as the audit trail records it.
    pub(super) fn subject(self) -> Subject {
        match self {
            Action::CallTool(name) => Subject::Tool(name.to_owned()),
            Action::ReadResource(uri) => Subject::Resource(uri.to_owned()),
            Action::UsePrompt(name) => Subject::Prompt(name.to_owned()),
            Action::CompleteTemplate(uri) => Subject::Template(uri.to_owned()),
        }
    }
}

/// Whether `owner` may do `action`: `Ok`, or the refusal to answer with.
pub(super) fn authorize(owner: &Owner, action: Action<'_>) -> Result<(), RpcError> {
    let (what, name) = match action {
        Action::CallTool(name) => ("tool", name),
        Action::ReadResource(uri) => ("resource", uri),
        Action::UsePrompt(name) => ("prompt", name),
        Action::CompleteTemplate(uri) => ("template", uri),
    };
    tracing::trace!(%owner, what, name, "authorized");
    Ok(())
}
