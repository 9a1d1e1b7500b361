//! Chat messages: what a prompt produces and what sampling sends and receives (the WIT
//! `messages` interface).

use crate::output::Content;

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The user (or the tool, speaking for them).
    User,
    /// The model.
    Assistant,
}

/// One message of a conversation: a role and one content block.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said: usually text; images and audio too, and resources for prompts.
    pub content: Content,
}

impl Message {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Message {
        Message { role: Role::User, content: Content::Text(text.into()) }
    }

    /// A text message from the model: a prompt may put words in its mouth to steer it.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message { role: Role::Assistant, content: Content::Text(text.into()) }
    }

    /// The message's text, when its content is text.
    pub fn text(&self) -> Option<&str> {
        if let Content::Text(text) = &self.content {
            Some(text)
        } else {
            None
        }
    }
}
