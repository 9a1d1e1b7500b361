//! Resources: data a client reads by URI, at a fixed URI ([`Resource`]) or at every URI a
//! template matches ([`ResourceTemplate`]). Exported with `export!(tools, surface)` under the
//! crate's `full` feature.

use std::collections::BTreeMap;
use std::fmt::Display;

use crate::uri_template;

/// A resource's contents: text (sent as `text`) or bytes (sent base64 as `blob`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// Text.
    Text(String),
    /// Bytes.
    Bytes(Vec<u8>),
}

impl From<String> for Body {
    fn from(text: String) -> Body {
        Body::Text(text)
    }
}

impl From<&str> for Body {
    fn from(text: &str) -> Body {
        Body::Text(text.to_owned())
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Body {
        Body::Bytes(bytes)
    }
}

/// One piece of what a read returns: the URI it is of, its MIME type and its body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contents {
    /// Usually the URI that was read.
    pub uri: String,
    /// The MIME type, when known.
    pub mime_type: Option<String>,
    /// The data.
    pub body: Body,
}

/// Why a read gave nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// Nothing is at this URI: the client gets -32002 (resource not found).
    NotFound,
    /// Reading failed; the text goes to the client (-32603).
    Failed(String),
}

impl ReadError {
    /// A failure whose text is `e`'s: `.map_err(ReadError::failed)?`.
    pub fn failed(e: impl Display) -> ReadError {
        ReadError::Failed(e.to_string())
    }
}

impl From<String> for ReadError {
    fn from(message: String) -> ReadError {
        ReadError::Failed(message)
    }
}

impl From<&str> for ReadError {
    fn from(message: &str) -> ReadError {
        ReadError::Failed(message.to_owned())
    }
}

/// What `list-resources` and `list-resource-templates` say about one entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceInfo {
    /// The URI, or the URI template.
    pub uri: String,
    /// A short name.
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What it holds.
    pub description: Option<String>,
    /// Its MIME type (every matching resource's, for a template).
    pub mime_type: Option<String>,
    /// Its size in bytes, when known (fixed resources only).
    pub size: Option<u64>,
}

type Reader = Box<dyn Fn(&BTreeMap<String, String>) -> Result<Body, ReadError>>;
pub(crate) type Completer = Box<dyn Fn(&str, &BTreeMap<String, String>) -> Vec<String>>;

macro_rules! describe_builders {
    ($ty:ident) => {
        impl $ty {
            /// A name for people.
            pub fn title(mut self, title: impl Into<String>) -> $ty {
                self.info.title = Some(title.into());
                self
            }

            /// What it holds, for the client and its model.
            pub fn description(mut self, description: impl Into<String>) -> $ty {
                self.info.description = Some(description.into());
                self
            }

            /// Its MIME type (`text/markdown`, `application/json`, ...).
            pub fn mime_type(mut self, mime_type: impl Into<String>) -> $ty {
                self.info.mime_type = Some(mime_type.into());
                self
            }

            /// What the listing says about it.
            pub fn info(&self) -> &ResourceInfo {
                &self.info
            }
        }
    };
}

/// A resource at one fixed URI.
pub struct Resource {
    info: ResourceInfo,
    read: Reader,
}

describe_builders!(Resource);

impl Resource {
    /// The resource at `uri` (absolute, unique across the host: give it a scheme of your own),
    /// named `name`, whose contents `read` makes at each read.
    pub fn new<B: Into<Body>>(uri: impl Into<String>, name: impl Into<String>, read: impl Fn() -> Result<B, ReadError> + 'static) -> Resource {
        let info = ResourceInfo { uri: uri.into(), name: name.into(), ..ResourceInfo::default() };
        Resource { info, read: Box::new(move |_| read().map(Into::into)) }
    }

    /// Its size in bytes, when known in advance.
    pub fn size(mut self, size: u64) -> Resource {
        self.info.size = Some(size);
        self
    }
}

/// A family of resources: every URI an RFC 6570 template such as `notes://{id}` matches. The
/// reader gets the template's variables, percent-decoded.
pub struct ResourceTemplate {
    info: ResourceInfo,
    read: Reader,
    pub(crate) completers: Vec<(String, Completer)>,
}

describe_builders!(ResourceTemplate);

impl ResourceTemplate {
    /// The template `uri_template` (starting with a literal scheme), named `name`; `read` gets
    /// its variables by name and answers [`ReadError::NotFound`] for values that name nothing.
    pub fn new<B: Into<Body>>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        read: impl Fn(&BTreeMap<String, String>) -> Result<B, ReadError> + 'static,
    ) -> ResourceTemplate {
        let info = ResourceInfo { uri: uri_template.into(), name: name.into(), ..ResourceInfo::default() };
        ResourceTemplate { info, read: Box::new(move |vars| read(vars).map(Into::into)), completers: vec![] }
    }

    /// Suggestions for variable `variable` while the user types it: `complete(typed_so_far,
    /// other_variables_already_filled)`. The host passes on at most 100.
    pub fn complete(mut self, variable: impl Into<String>, complete: impl Fn(&str, &BTreeMap<String, String>) -> Vec<String> + 'static) -> ResourceTemplate {
        self.completers.push((variable.into(), Box::new(complete)));
        self
    }
}

impl Resource {
    /// The contents, when `uri` is this resource's.
    pub(crate) fn read(&self, uri: &str) -> Option<Result<Vec<Contents>, ReadError>> {
        (uri == self.info.uri).then(|| contents(&self.info, uri, (self.read)(&BTreeMap::new())))
    }
}

impl ResourceTemplate {
    /// The contents, when `uri` matches this template.
    pub(crate) fn read(&self, uri: &str) -> Option<Result<Vec<Contents>, ReadError>> {
        let vars = uri_template::matches(&self.info.uri, uri)?;
        Some(contents(&self.info, uri, (self.read)(&vars)))
    }
}

/// One piece of contents of `uri` with the listing's MIME type.
fn contents(info: &ResourceInfo, uri: &str, body: Result<Body, ReadError>) -> Result<Vec<Contents>, ReadError> {
    Ok(vec![Contents { uri: uri.to_owned(), mime_type: info.mime_type.clone(), body: body? }])
}
