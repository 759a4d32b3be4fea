//! Content blocks a call returns beside its JSON result: text, pictures,
//! sounds, links to resources and embedded resources, as the host holds
//! them once it has checked them (`airlock:tool/content`, contract 0.3.0).
//!
//! A [`Block`] is built by the sandbox when a guest attaches it, after the
//! checks of the operator's caps, media types and URIs; it goes with the
//! call's [`Success`](crate::outcome::Success) and never with a failure.
//! Front ends render blocks at their edge (MCP content blocks, an
//! Anthropic image, a one-line [`Block::stand_in`] where a format has no
//! block for it); the audit record keeps each block's [`Summary`] (kind,
//! media type, size, digest), never its bytes.

use crate::text::{ELLIPSIS, MAX_MODEL_TEXT, cap, tool_char};
use std::fmt;

/// What kind of block: the names are those of MCP's content blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Text for the model.
    Text,
    /// A picture.
    Image,
    /// A sound.
    Audio,
    /// A link to a resource.
    ResourceLink,
    /// A resource embedded in the result.
    Resource,
}

impl Kind {
    /// The protocol name: `text`, `image`, `audio`, `resource_link` or
    /// `resource`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Image => "image",
            Kind::Audio => "audio",
            Kind::ResourceLink => "resource_link",
            Kind::Resource => "resource",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bytes with their media type (a picture or a sound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    /// The media type the bytes were checked against, e.g. `image/png`.
    pub mime_type: String,
    /// The bytes.
    pub data: Vec<u8>,
}

/// A link to a resource the client may fetch or show (the host never
/// fetches it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The resource's URI (its scheme checked against the host's list).
    pub uri: String,
    /// A short name, e.g. the file name.
    pub name: String,
    /// A title for people.
    pub title: Option<String>,
    /// What the resource is.
    pub description: Option<String>,
    /// Its media type, when the tool gave one.
    pub mime_type: Option<String>,
    /// Its size in bytes, as the tool stated it.
    pub size: Option<u64>,
}

/// The body of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Text, e.g. an SVG document.
    Text(String),
    /// Bytes, e.g. a PDF.
    Blob(Vec<u8>),
}

/// A resource embedded in the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedded {
    /// The resource's URI (a name for it; nothing is fetched).
    pub uri: String,
    /// Its media type, when the tool gave one.
    pub mime_type: Option<String>,
    /// Its contents.
    pub body: Body,
}

/// What a block holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text for the model, cleaned as a tool's error message is
    /// ([`clean_text`]).
    Text(String),
    /// A picture whose bytes are of its media type.
    Image(Media),
    /// A sound whose bytes are of its media type.
    Audio(Media),
    /// A link to a resource.
    Link(Link),
    /// An embedded resource.
    Embedded(Embedded),
}

impl Content {
    /// The block's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Content::Text(_) => Kind::Text,
            Content::Image(_) => Kind::Image,
            Content::Audio(_) => Kind::Audio,
            Content::Link(_) => Kind::ResourceLink,
            Content::Embedded(_) => Kind::Resource,
        }
    }

    /// The block's media type: `text/plain` for text, the declared one
    /// otherwise (a link or an embedded resource may have none).
    pub fn media_type(&self) -> Option<&str> {
        match self {
            Content::Text(_) => Some("text/plain"),
            Content::Image(media) | Content::Audio(media) => Some(&media.mime_type),
            Content::Link(link) => link.mime_type.as_deref(),
            Content::Embedded(embedded) => embedded.mime_type.as_deref(),
        }
    }

    /// The block's payload, the bytes its size and digest are of: the text,
    /// the picture's or sound's bytes, the link's URI, the embedded body.
    pub fn payload(&self) -> &[u8] {
        match self {
            Content::Text(text) => text.as_bytes(),
            Content::Image(media) | Content::Audio(media) => &media.data,
            Content::Link(link) => link.uri.as_bytes(),
            Content::Embedded(Embedded { body: Body::Text(text), .. }) => text.as_bytes(),
            Content::Embedded(Embedded { body: Body::Blob(data), .. }) => data,
        }
    }

    /// Every byte the block makes the host hold: its payload and its
    /// strings. What the operator's content caps count.
    pub fn held_bytes(&self) -> u64 {
        let strings = match self {
            Content::Text(_) => 0,
            Content::Image(media) | Content::Audio(media) => media.mime_type.len(),
            Content::Link(link) => {
                let optional = [&link.title, &link.description, &link.mime_type];
                link.name.len() + optional.iter().filter_map(|s| s.as_ref()).map(String::len).sum::<usize>()
            }
            Content::Embedded(embedded) => embedded.uri.len() + embedded.mime_type.as_ref().map_or(0, String::len),
        };
        (self.payload().len() as u64).saturating_add(strings as u64)
    }
}

/// What a record keeps of a block: never its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The block's kind.
    pub kind: Kind,
    /// Its media type, when it has one.
    pub media_type: Option<String>,
    /// The size of its payload in bytes ([`Content::payload`]).
    pub size: u64,
    /// `sha256:<hex>` of its payload.
    pub sha256: String,
}

/// A block the host accepted: its content and the digest of its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    content: Content,
    sha256: String,
}

impl Block {
    /// A block of `content` whose payload's digest is `sha256`
    /// (`sha256:<hex>`). The sandbox builds blocks once it has checked
    /// them; nothing else should.
    pub fn new(content: Content, sha256: String) -> Self {
        Self { content, sha256 }
    }

    /// What the block holds.
    pub fn content(&self) -> &Content {
        &self.content
    }

    /// What the block holds and its digest, by value.
    pub fn into_parts(self) -> (Content, String) {
        (self.content, self.sha256)
    }

    /// The block's kind.
    pub fn kind(&self) -> Kind {
        self.content.kind()
    }

    /// `sha256:<hex>` of the payload.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// What the audit record keeps of it.
    pub fn summary(&self) -> Summary {
        Summary {
            kind: self.kind(),
            media_type: self.content.media_type().map(str::to_owned),
            size: self.content.payload().len() as u64,
            sha256: self.sha256.clone(),
        }
    }

    /// One line that says what the block is, for a format or a revision
    /// that cannot show it: its kind, media type, size and digest (and a
    /// link's URI), and that `format` cannot show it. E.g. `[the tool
    /// returned an image (image/png, 1 234 bytes, sha256:ab12…) that
    /// OpenAI Chat Completions cannot show]`.
    pub fn stand_in(&self, format: &str) -> String {
        let summary = self.summary();
        let kind = match summary.kind {
            Kind::Text => "a text block",
            Kind::Image => "an image",
            Kind::Audio => "an audio clip",
            Kind::ResourceLink => "a resource link",
            Kind::Resource => "an embedded resource",
        };
        let media = summary.media_type.as_deref().map(clean_line);
        let digest = || [Some(format!("{} bytes", summary.size)), Some(summary.sha256.clone())];
        let (target, parts): (String, Vec<Option<String>>) = match &self.content {
            // A link is its URI: its name, and the size the tool stated.
            Content::Link(link) => (
                format!(" to {}", clean_line(&link.uri)),
                vec![Some(clean_line(&link.name)), media, link.size.map(|size| format!("{size} bytes"))],
            ),
            Content::Embedded(embedded) => {
                (format!(" named {}", clean_line(&embedded.uri)), [media].into_iter().chain(digest()).collect())
            }
            _ => (String::new(), [media].into_iter().chain(digest()).collect()),
        };
        let what = parts.into_iter().flatten().collect::<Vec<_>>().join(", ");
        format!("[the tool returned {kind}{target} ({what}) that {format} cannot show]")
    }
}

/// What the model may still read of one result: [`MAX_MODEL_TEXT`] bytes
/// for the result's text and its text blocks together, as for a result
/// without blocks. Front ends that hand text blocks to the model take them
/// through it, in order.
#[derive(Debug, Clone, Copy)]
pub struct ModelText {
    left: usize,
}

impl ModelText {
    /// What is left after the result's own text, `result_text`.
    pub fn after(result_text: &str) -> Self {
        Self { left: MAX_MODEL_TEXT.saturating_sub(result_text.len()) }
    }

    /// The text block `text` as the model reads it: whole while it fits in
    /// what is left, else cut there with a note saying how much was cut.
    pub fn take(&mut self, text: &str) -> String {
        if text.len() <= self.left {
            self.left -= text.len();
            return text.to_owned();
        }
        let note = |cut: usize| {
            format!(
                "[{cut} more bytes of this text block cut: it was {} bytes, and the model reads at most \
                 {MAX_MODEL_TEXT} bytes of one result]",
                text.len()
            )
        };
        if self.left <= ELLIPSIS.len() {
            self.left = 0;
            return note(text.len());
        }
        let kept = cap(text, self.left);
        self.left = 0;
        let cut = text.len() - (kept.len() - ELLIPSIS.len());
        format!("{kept}\n{}", note(cut))
    }
}

/// `text` as a tool's text is kept wherever a model or a person reads it
/// ([`tool_char`]: no control characters but `\n` and `\t`, no
/// bidirectional overrides, Unicode line separators as `\n`). Nothing is
/// cut: the caller's caps apply.
pub fn clean_text(text: &str) -> String {
    text.chars().filter_map(tool_char).collect()
}

/// `text` cleaned ([`clean_text`]) and on one line: line breaks and tabs
/// become spaces. For names, titles and URIs shown inside a host's line.
pub fn clean_line(text: &str) -> String {
    text.chars().filter_map(tool_char).map(|c| if c == '\n' || c == '\t' { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> Block {
        Block::new(Content::Image(Media { mime_type: "image/png".into(), data: vec![1, 2, 3] }), "sha256:ab".into())
    }

    #[test]
    fn a_block_is_summed_up_by_its_payload() {
        let summary = image().summary();
        assert_eq!(
            summary,
            Summary { kind: Kind::Image, media_type: Some("image/png".into()), size: 3, sha256: "sha256:ab".into() }
        );
        let link = Content::Link(Link {
            uri: "https://example.com/a.pdf".into(),
            name: "a.pdf".into(),
            title: Some("A".into()),
            description: None,
            mime_type: Some("application/pdf".into()),
            size: Some(99),
        });
        assert_eq!(link.payload(), b"https://example.com/a.pdf");
        assert_eq!(link.held_bytes(), 25 + 5 + 1 + 15);
        assert_eq!(Content::Text("hé".into()).media_type(), Some("text/plain"));
    }

    #[test]
    fn a_stand_in_names_what_was_returned_and_who_cannot_show_it() {
        let line = image().stand_in("OpenAI Chat Completions");
        assert_eq!(
            line,
            "[the tool returned an image (image/png, 3 bytes, sha256:ab) that OpenAI Chat Completions cannot show]"
        );
        let link = Block::new(
            Content::Embedded(Embedded { uri: "file:///a\nb".into(), mime_type: None, body: Body::Blob(vec![0]) }),
            "sha256:cd".into(),
        );
        let line = link.stand_in("MCP 2024-11-05");
        assert!(line.contains("an embedded resource named file:///a b (1 bytes, sha256:cd)"), "{line}");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn a_results_text_and_its_text_blocks_share_the_model_text_cap() {
        let mut budget = ModelText::after(&"r".repeat(MAX_MODEL_TEXT - 100));
        assert_eq!(budget.take("short"), "short");
        let long = budget.take(&"é".repeat(100));
        let (kept, note) = long.split_once('…').unwrap();
        assert!(kept.len() <= 95 - ELLIPSIS.len(), "{}", kept.len());
        assert!(note.contains("it was 200 bytes"), "{note}");
        assert!(note.contains(&format!("at most {MAX_MODEL_TEXT} bytes of one result")), "{note}");
        let none = budget.take("more");
        assert!(none.starts_with("[4 more bytes of this text block cut"), "{none}");
        let mut whole = ModelText::after("");
        assert_eq!(whole.take(&"x".repeat(MAX_MODEL_TEXT)).len(), MAX_MODEL_TEXT);
    }

    #[test]
    fn text_is_cleaned_as_tool_messages_are_but_not_cut() {
        assert_eq!(clean_text("a\r\nb\u{202e}c\u{1b}[0m\u{2028}d"), "a\nbc[0m\nd");
        assert_eq!(clean_text(&"x".repeat(100_000)).len(), 100_000);
        assert_eq!(clean_line("a\nb\tc"), "a b c");
    }
}
