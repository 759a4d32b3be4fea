//! Content blocks returned beside a call's JSON result: pictures, sounds,
//! files the tool made, and links (`airlock:tool/content`).
//!
//! A block is attached while the call runs and goes with its result, in
//! the order attached. The host checks each one as it arrives (its size
//! against the operator's caps, an image's or a sound's bytes against its
//! media type) and says why it refused one; a refused block makes the call
//! fail, so a tool cannot quietly lose what it meant to show. A call that
//! returns an error returns no blocks.
//!
//! ```
//! use airlock_guest::content::{self, Content};
//! # fn png_bytes() -> Vec<u8> { Vec::new() }
//! # fn run() -> Result<(), airlock_guest::ToolError> {
//! content::attach(Content::image("image/png", png_bytes()))?;
//! content::attach(Content::link("https://example.com/report.pdf", "report.pdf").mime_type("application/pdf"))?;
//! # Ok(()) }
//! ```

use crate::ToolError;

/// One content block.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Text for the model, shown after the result.
    Text(String),
    /// A picture: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    Image {
        /// The media type; the host checks the bytes are of it.
        mime_type: String,
        /// The picture's bytes.
        data: Vec<u8>,
    },
    /// A sound: `audio/wav`, `audio/mpeg`, `audio/ogg` or `audio/flac`.
    Audio {
        /// The media type; the host checks the bytes are of it.
        mime_type: String,
        /// The sound's bytes.
        data: Vec<u8>,
    },
    /// A link to a resource the client may fetch or show (the host never
    /// fetches it).
    Link(Link),
    /// A resource embedded in the result: a file the tool made.
    Embedded {
        /// The resource's URI (a name for it; nothing is fetched).
        uri: String,
        /// Its media type, when known.
        mime_type: Option<String>,
        /// Its contents.
        body: Body,
    },
}

/// A link to a resource, built with [`Content::link`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The resource's URI.
    pub uri: String,
    /// A short name, e.g. the file name.
    pub name: String,
    /// A title for people, if it differs from the name.
    pub title: Option<String>,
    /// What the resource is, for a model choosing whether to read it.
    pub description: Option<String>,
    /// Its media type, when known.
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
}

/// The body of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Text, e.g. an SVG document or a diff.
    Text(String),
    /// Bytes, e.g. a PDF.
    Blob(Vec<u8>),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// A picture of `mime_type` (e.g. `image/png`).
    pub fn image(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::Image { mime_type: mime_type.into(), data }
    }

    /// A sound of `mime_type` (e.g. `audio/wav`).
    pub fn audio(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::Audio { mime_type: mime_type.into(), data }
    }

    /// A link to `uri` named `name`; add details with [`Content::title`],
    /// [`Content::description`], [`Content::mime_type`] and [`Content::size`].
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::Link(Link {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        })
    }

    /// An embedded text file (e.g. an SVG document).
    pub fn embedded_text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Embedded { uri: uri.into(), mime_type: Some(mime_type.into()), body: Body::Text(text.into()) }
    }

    /// An embedded binary file (e.g. a PDF).
    pub fn embedded_blob(uri: impl Into<String>, mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::Embedded { uri: uri.into(), mime_type: Some(mime_type.into()), body: Body::Blob(data) }
    }

    /// The link's title (no effect on other blocks).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        if let Self::Link(link) = &mut self {
            link.title = Some(title.into());
        }
        self
    }

    /// The link's description (no effect on other blocks).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        if let Self::Link(link) = &mut self {
            link.description = Some(description.into());
        }
        self
    }

    /// The media type of a link or an embedded resource (no effect on other
    /// blocks, whose media type is required).
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        match &mut self {
            Self::Link(link) => link.mime_type = Some(mime_type.into()),
            Self::Embedded { mime_type: kept, .. } => *kept = Some(mime_type.into()),
            _ => {}
        }
        self
    }

    /// The link's size in bytes (no effect on other blocks).
    pub fn size(mut self, size: u64) -> Self {
        if let Self::Link(link) = &mut self {
            link.size = Some(size);
        }
        self
    }
}

/// Attach `block` to the current call's result.
///
/// # Errors
///
/// Why the host refused the block (a cap and its value, a media type that
/// does not match the bytes), as a [`ToolError`] with the code
/// `content_refused`: returning it with `?` ends the call, which fails
/// with the host's reason either way.
pub fn attach(block: Content) -> Result<(), ToolError> {
    host::attach(block).map_err(|reason| ToolError::with_code("content_refused", reason))
}

/// The blocks attached since the last call of this function, in order.
/// Only in a native build (a tool's unit tests); a component's blocks go to
/// the host.
#[cfg(not(target_arch = "wasm32"))]
pub fn take_attached() -> Vec<Content> {
    host::ATTACHED.with(|attached| std::mem::take(&mut *attached.borrow_mut()))
}

#[cfg(target_arch = "wasm32")]
mod host {
    use super::{Body, Content};
    use crate::bindings::airlock::tool::content as wit;

    pub(super) fn attach(block: Content) -> Result<(), String> {
        let block = match block {
            Content::Text(text) => wit::Block::Text(text),
            Content::Image { mime_type, data } => wit::Block::Image(wit::Media { mime_type, data }),
            Content::Audio { mime_type, data } => wit::Block::Audio(wit::Media { mime_type, data }),
            Content::Link(link) => wit::Block::ResourceLink(wit::Link {
                uri: link.uri,
                name: link.name,
                title: link.title,
                description: link.description,
                mime_type: link.mime_type,
                size: link.size,
            }),
            Content::Embedded { uri, mime_type, body } => wit::Block::Embedded(wit::Embedded {
                uri,
                mime_type,
                body: match body {
                    Body::Text(text) => wit::Body::Text(text),
                    Body::Blob(data) => wit::Body::Blob(data),
                },
            }),
        };
        wit::attach(&block)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod host {
    use super::Content;
    use std::cell::RefCell;

    thread_local! {
        /// What a native build attached, for its tests to read.
        pub(super) static ATTACHED: RefCell<Vec<Content>> = const { RefCell::new(Vec::new()) };
    }

    #[expect(clippy::unnecessary_wraps, reason = "the same signature as the component's")]
    pub(super) fn attach(block: Content) -> Result<(), String> {
        ATTACHED.with(|attached| attached.borrow_mut().push(block));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_native_build_keeps_what_was_attached_in_order() {
        attach(Content::text("one")).unwrap();
        attach(Content::link("https://example.com/a.pdf", "a.pdf").mime_type("application/pdf").size(3)).unwrap();
        let attached = take_attached();
        assert_eq!(attached.len(), 2);
        assert_eq!(attached[0], Content::Text("one".into()));
        let Content::Link(link) = &attached[1] else { panic!("not a link: {:?}", attached[1]) };
        assert_eq!((link.mime_type.as_deref(), link.size), (Some("application/pdf"), Some(3)));
        assert!(take_attached().is_empty());
    }
}
