//! Resource URIs as the host compares them: one canonical form of a URI ([`canonical`]) and the
//! URI templates of RFC 6570 ([`UriTemplate`]). A room of its own, importing nothing, because
//! the registry routes by them, the policy decides by them and the server hands them to
//! plugins: all three must see the same URI, or a rule can be passed by spelling a URI another
//! way.

mod canonical;
mod template;

pub use canonical::canonical;
pub use template::{check_uri, UriTemplate};
