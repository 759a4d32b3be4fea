//! `airlock:tool/content` (contract 0.3.0): the content blocks a call
//! attaches beside its JSON result, each checked as it arrives.
//!
//! Trusts nothing the guest attaches. Before a block is kept, the host
//! checks, in this order: the number of blocks (`max_content_blocks`), the
//! block's size (`max_content_block_bytes`: its bytes, text and strings)
//! and the call's total (`max_content_bytes`), then what it is: a picture's
//! or a sound's media type against the accepted ones and its bytes against
//! that type ([`media`]: magic numbers, and a picture's declared width ×
//! height against `max_image_pixels`, read from its header without
//! decoding it), a URI's scheme and length ([`uri`]), a link's or an
//! embedded resource's media type's form. Text is cleaned as a tool's
//! error message is ([`airlock_core::content::clean_text`]). A block whose
//! bytes are larger than a host call may carry never crosses at all: the
//! guest is stopped before the host copies it (`Limits::hostcall_bytes`,
//! classified in `sandbox/failure.rs`).
//!
//! The first refused block decides the call: `attach` tells the guest why,
//! the blocks kept so far are dropped, and the call fails with that refusal
//! ([`Attached::refused`], turned into the call's failure by the check
//! stage) whatever the handler returns. Kinds: `output_too_large` for a
//! count or a size (pixels included), `invalid_output` for anything else.
//! What the blocks hold is within `max_content_bytes`, which each call of a
//! 0.3.0 component reserves from the host memory budget before it runs.

pub(crate) mod media;
pub(crate) mod uri;

use crate::bindings::v0_3::airlock::tool::content as wit;
use airlock_core::content::{Block, Body, Content, Embedded, Kind, Link, Media, clean_line, clean_text};
use airlock_core::outcome::{Blame, ErrorKind, Failure, Retry};
use airlock_settings::limits::Limits;
use media::{AUDIO_TYPES, Format, IMAGE_TYPES, Sniffed};
use sha2::{Digest, Sha256};
use wasmtime::component::{HasSelf, Linker};

/// What a call attached, as the check stage receives it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attached {
    /// The blocks, in the order attached (none once one was refused).
    pub blocks: Vec<Block>,
    /// Why the first refused block was refused: the call's failure.
    pub refused: Option<Failure>,
}

/// The caps a call's blocks are checked against, from its limits.
#[derive(Debug, Clone, Copy)]
struct Caps {
    blocks: usize,
    block_bytes: u64,
    total_bytes: u64,
    image_pixels: u64,
    uri_bytes: usize,
}

impl Caps {
    fn of(limits: &Limits) -> Self {
        Self {
            blocks: limits.max_content_blocks,
            block_bytes: limits.max_content_block_bytes as u64,
            total_bytes: limits.max_content_bytes as u64,
            image_pixels: limits.max_image_pixels,
            uri_bytes: limits.max_uri_bytes,
        }
    }
}

/// The content blocks of the call being served.
pub(crate) struct ContentSlot {
    caps: Caps,
    /// False while the metadata is read: nothing can be attached then.
    serving: bool,
    blocks: Vec<Block>,
    /// What the kept blocks hold, in bytes.
    held: u64,
    refused: Option<Failure>,
}

/// What `attach` says outside a call.
const NOT_SERVING: &str = "airlock:tool/content.attach was called while no call is being served (the host was \
                           reading the tool's metadata); attach blocks only in handler.call";

impl ContentSlot {
    /// An empty slot under `limits`, not serving a call yet.
    pub(crate) fn new(limits: &Limits) -> Self {
        Self { caps: Caps::of(limits), serving: false, blocks: Vec::new(), held: 0, refused: None }
    }

    /// Start a call under `limits` (`serving`: false while the metadata is
    /// read), with nothing attached.
    pub(crate) fn renew(&mut self, limits: &Limits, serving: bool) {
        *self = Self { serving, ..Self::new(limits) };
    }

    /// What the call attached; the slot is empty afterwards.
    pub(crate) fn take(&mut self) -> Attached {
        self.held = 0;
        Attached { blocks: std::mem::take(&mut self.blocks), refused: self.refused.take() }
    }

    /// Link `airlock:tool/content` (0.3.0), answering from the slot
    /// `project` finds in the store's data.
    pub(crate) fn add_to_linker<T: Send + 'static>(
        linker: &mut Linker<T>,
        project: fn(&mut T) -> &mut ContentSlot,
    ) -> wasmtime::Result<()> {
        wit::add_to_linker::<T, HasSelf<ContentSlot>>(linker, project)
    }

    /// Check `block`, the `number`th of the call (from 1), and make it a
    /// host block.
    fn accept(&self, number: usize, block: wit::Block) -> Result<Block, Failure> {
        let kind = kind_of(&block);
        let what = format!("the tool's content block {number} ({kind})");
        let caps = self.caps;
        if number > caps.blocks {
            return Err(refusal(
                ErrorKind::OutputTooLarge,
                format!(
                    "{what} is more than the {} content blocks a call may attach (max_content_blocks = {})",
                    caps.blocks, caps.blocks
                ),
            ));
        }
        let size = raw_bytes(&block);
        if size > caps.block_bytes {
            return Err(refusal(
                ErrorKind::OutputTooLarge,
                format!(
                    "{what} holds {size} bytes, more than the {} bytes one block may hold (max_content_block_bytes \
                     = {})",
                    caps.block_bytes, caps.block_bytes
                ),
            ));
        }
        let total = self.held.saturating_add(size);
        if total > caps.total_bytes {
            return Err(refusal(
                ErrorKind::OutputTooLarge,
                format!(
                    "{what} of {size} bytes brings the call's content blocks to {total} bytes, more than the {} \
                     bytes a call may attach (max_content_bytes = {})",
                    caps.total_bytes, caps.total_bytes
                ),
            ));
        }
        let content = self.content(&what, block)?;
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(content.payload())));
        Ok(Block::new(content, digest))
    }

    /// `block` as the host keeps it, once its type, bytes and URIs are
    /// checked and its text cleaned.
    fn content(&self, what: &str, block: wit::Block) -> Result<Content, Failure> {
        Ok(match block {
            wit::Block::Text(text) => Content::Text(clean_text(&text)),
            wit::Block::Image(media) => Content::Image(self.media(what, media, &IMAGE_TYPES)?),
            wit::Block::Audio(media) => Content::Audio(self.media(what, media, &AUDIO_TYPES)?),
            wit::Block::ResourceLink(link) => {
                let uri = self.link(what, &link.uri)?;
                Content::Link(Link {
                    uri,
                    name: clean_line(&link.name),
                    title: link.title.as_deref().map(clean_line),
                    description: link.description.as_deref().map(clean_text),
                    mime_type: media_type(what, link.mime_type)?,
                    size: link.size,
                })
            }
            wit::Block::Embedded(embedded) => {
                self.uri(what, &embedded.uri)?;
                Content::Embedded(Embedded {
                    uri: embedded.uri,
                    mime_type: media_type(what, embedded.mime_type)?,
                    body: match embedded.body {
                        wit::Body::Text(text) => Body::Text(text),
                        wit::Body::Blob(data) => Body::Blob(data),
                    },
                })
            }
        })
    }

    /// A picture or a sound whose media type is one of `accepted` and
    /// whose bytes are of that type (a picture within `max_image_pixels`).
    fn media(&self, what: &str, media: wit::Media, accepted: &[(&str, Format)]) -> Result<Media, Failure> {
        let shown = airlock_core::text::cap(&media.mime_type, 64);
        let Some(format) = media::format_of(&media.mime_type, accepted) else {
            let names: Vec<&str> = accepted.iter().map(|(name, _)| *name).collect();
            return Err(refusal(
                ErrorKind::InvalidOutput,
                format!(
                    "{what} declares the media type {shown:?}, which is not accepted here: accepted {} (send other \
                     files as an embedded resource)",
                    names.join(", ")
                ),
            ));
        };
        match media::sniff(format, &media.data) {
            Sniffed::Matches(Some((width, height))) if width.saturating_mul(height) > self.caps.image_pixels => {
                let cap = self.caps.image_pixels;
                Err(refusal(
                    ErrorKind::OutputTooLarge,
                    format!(
                        "{what} is a {} of {width} × {height} pixels, more than the {cap} pixels a picture may have \
                         (max_image_pixels = {cap}); it was refused from its header, without decoding it",
                        format.name()
                    ),
                ))
            }
            Sniffed::Matches(_) => Ok(Media { mime_type: media.mime_type.to_ascii_lowercase(), data: media.data }),
            Sniffed::Differs(other) => {
                let instead = other.map_or_else(String::new, |other| format!(" (they look like a {})", other.name()));
                Err(refusal(
                    ErrorKind::InvalidOutput,
                    format!(
                        "{what} declares the media type {shown:?} but its {} bytes are not a {}{instead}",
                        media.data.len(),
                        format.name()
                    ),
                ))
            }
        }
    }

    /// An embedded resource's URI, if accepted ([`uri::check`]).
    fn uri(&self, what: &str, uri: &str) -> Result<(), Failure> {
        uri::check(uri, self.caps.uri_bytes).map_err(|refused| self.refused_uri(what, refused, Target::Embedded))
    }

    /// A resource link's URI as the client gets it, if accepted
    /// ([`uri::check_link`]).
    fn link(&self, what: &str, uri: &str) -> Result<String, Failure> {
        uri::check_link(uri, self.caps.uri_bytes).map_err(|refused| self.refused_uri(what, refused, Target::Link))
    }

    /// Why a URI of `target` was refused, and what is accepted.
    fn refused_uri(&self, what: &str, refused: uri::Refused, target: Target) -> Failure {
        let max = self.caps.uri_bytes;
        let (kind, why) = match refused {
            uri::Refused::TooLong(len) => (
                ErrorKind::OutputTooLarge,
                format!("has a URI of {len} bytes, more than the {max} bytes a URI may have (max_uri_bytes = {max})"),
            ),
            uri::Refused::NoScheme => {
                (ErrorKind::InvalidOutput, "has a URI without a scheme (e.g. `https:`), or with a malformed one".into())
            }
            uri::Refused::Scheme(scheme) => (ErrorKind::InvalidOutput, format!("has a URI of scheme {scheme:?}")),
            uri::Refused::Characters => (
                ErrorKind::InvalidOutput,
                "has a URI with whitespace, control or bidirectional formatting characters (percent-encode them)"
                    .into(),
            ),
            uri::Refused::Malformed(reason) => {
                (ErrorKind::InvalidOutput, format!("has a URL that does not parse ({reason})"))
            }
            uri::Refused::Userinfo => (
                ErrorKind::InvalidOutput,
                "has a URL with a user name or password before its host, which can hide the real host or carry a \
                 credential"
                    .into(),
            ),
            uri::Refused::Localhost => (
                ErrorKind::InvalidOutput,
                "has a URL whose host is localhost, the machine of whoever opens the link".into(),
            ),
            uri::Refused::Address(ip, class) => (
                ErrorKind::InvalidOutput,
                format!("has a URL whose host {ip} is {}, not a public address", class.describe()),
            ),
        };
        let accepted = match target {
            Target::Link => uri::LINK_RULE.to_owned(),
            Target::Embedded => format!("accepted: URIs of scheme {}", uri::URI_SCHEMES.join(", ")),
        };
        refusal(kind, format!("{what} {why}; {accepted}"))
    }
}

/// Whose URI is checked: a link's, which a client may open or fetch, or
/// an embedded resource's, which names the bytes it carries.
#[derive(Debug, Clone, Copy)]
enum Target {
    Link,
    Embedded,
}

/// Apply `scrub` to every string of `blocks` that is text (text blocks,
/// a link's URI, name, title and description, an embedded resource's URI
/// and text body), and digest again a block whose payload changed. The
/// bytes of pictures, sounds and blobs are not searched.
pub(crate) fn scrub(blocks: &mut [Block], scrub: impl Fn(&mut String)) {
    // Whether scrubbing `text` changed it.
    let changed = |text: &mut String| {
        let before = text.clone();
        scrub(text);
        before != *text
    };
    for block in blocks.iter_mut() {
        if matches!(block.content(), Content::Image(_) | Content::Audio(_)) {
            continue;
        }
        let placeholder = Block::new(Content::Text(String::new()), String::new());
        let (mut content, digest) = std::mem::replace(block, placeholder).into_parts();
        let payload_changed = match &mut content {
            Content::Text(text) => changed(text),
            Content::Link(link) => {
                for text in [&mut link.name].into_iter().chain(link.title.as_mut()).chain(link.description.as_mut()) {
                    scrub(text);
                }
                changed(&mut link.uri)
            }
            Content::Embedded(embedded) => {
                scrub(&mut embedded.uri);
                match &mut embedded.body {
                    Body::Text(text) => changed(text),
                    Body::Blob(_) => false,
                }
            }
            Content::Image(_) | Content::Audio(_) => false,
        };
        let digest =
            if payload_changed { format!("sha256:{}", hex::encode(Sha256::digest(content.payload()))) } else { digest };
        *block = Block::new(content, digest);
    }
}

/// A link's or an embedded resource's media type, if it has the form of
/// one.
fn media_type(what: &str, media_type: Option<String>) -> Result<Option<String>, Failure> {
    match media_type {
        Some(media_type) if !uri::is_media_type(&media_type) => Err(refusal(
            ErrorKind::InvalidOutput,
            format!(
                "{what} declares {:?}, which is not a media type (`type/subtype`, e.g. `application/pdf`, at most \
                 {} bytes of printable ASCII)",
                airlock_core::text::cap(&media_type, 64),
                uri::MAX_MEDIA_TYPE_BYTES
            ),
        )),
        other => Ok(other),
    }
}

/// The refusal of a block: `why`, and what it means for the call. The
/// tool sent it, so the tool is blamed and the same call fails again
/// (whatever the kind's defaults say of a call's own output); the advice
/// is rendered from that, never written into the message.
fn refusal(kind: ErrorKind, why: String) -> Failure {
    Failure::new(
        kind,
        format!("{why}; so the call fails whatever the tool returned, and returns none of its content blocks"),
    )
    .blame(Blame::Tool)
    .retry(Retry::No)
}

/// The kind of a block as the guest sent it.
fn kind_of(block: &wit::Block) -> Kind {
    match block {
        wit::Block::Text(_) => Kind::Text,
        wit::Block::Image(_) => Kind::Image,
        wit::Block::Audio(_) => Kind::Audio,
        wit::Block::ResourceLink(_) => Kind::ResourceLink,
        wit::Block::Embedded(_) => Kind::Resource,
    }
}

/// Every byte of a block as the guest sent it: what the caps count.
fn raw_bytes(block: &wit::Block) -> u64 {
    let optional = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let bytes = match block {
        wit::Block::Text(text) => text.len(),
        wit::Block::Image(media) | wit::Block::Audio(media) => media.mime_type.len() + media.data.len(),
        wit::Block::ResourceLink(link) => {
            link.uri.len()
                + link.name.len()
                + optional(&link.title)
                + optional(&link.description)
                + optional(&link.mime_type)
        }
        wit::Block::Embedded(embedded) => {
            let body = match &embedded.body {
                wit::Body::Text(text) => text.len(),
                wit::Body::Blob(data) => data.len(),
            };
            embedded.uri.len() + optional(&embedded.mime_type) + body
        }
    };
    bytes as u64
}

impl wit::Host for ContentSlot {
    fn attach(&mut self, block: wit::Block) -> Result<(), String> {
        if !self.serving {
            return Err(NOT_SERVING.to_owned());
        }
        if let Some(refused) = &self.refused {
            return Err(format!(
                "an earlier content block was refused, so this call returns none: {}",
                refused.message
            ));
        }
        match self.accept(self.blocks.len() + 1, block) {
            Ok(block) => {
                self.held = self.held.saturating_add(block.content().held_bytes());
                self.blocks.push(block);
                Ok(())
            }
            Err(failure) => {
                let reason = failure.message.clone();
                // The call fails: what was kept is not returned, so it is
                // let go at once.
                self.blocks = Vec::new();
                self.held = 0;
                self.refused = Some(failure);
                Err(reason)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::media::tests::png_header;
    use super::*;

    fn slot(limits: Limits) -> ContentSlot {
        let mut slot = ContentSlot::new(&limits);
        slot.renew(&limits, true);
        slot
    }

    fn image(mime_type: &str, data: Vec<u8>) -> wit::Block {
        wit::Block::Image(wit::Media { mime_type: mime_type.into(), data })
    }

    fn refused(slot: &mut ContentSlot, block: wit::Block) -> Failure {
        let reason = wit::Host::attach(slot, block).unwrap_err();
        let attached = slot.take();
        assert!(attached.blocks.is_empty(), "a refused block leaves no block");
        let failure = attached.refused.unwrap();
        assert_eq!(failure.message, reason, "the guest reads what the call fails with");
        failure
    }

    #[test]
    fn blocks_are_kept_in_order_with_their_digest() {
        let mut slot = slot(Limits::default());
        wit::Host::attach(&mut slot, wit::Block::Text("one\u{202e}\r\n".into())).unwrap();
        wit::Host::attach(&mut slot, image("IMAGE/PNG", png_header(1, 1))).unwrap();
        let attached = slot.take();
        assert_eq!(attached.refused, None);
        assert_eq!(attached.blocks.len(), 2);
        assert_eq!(attached.blocks[0].content(), &Content::Text("one\n".into()), "text is cleaned");
        let summary = attached.blocks[1].summary();
        assert_eq!(summary.media_type.as_deref(), Some("image/png"));
        assert_eq!(summary.size, 33);
        assert!(summary.sha256.starts_with("sha256:") && summary.sha256.len() == 71, "{}", summary.sha256);
        assert!(slot.take().blocks.is_empty(), "taken once");
    }

    #[test]
    fn each_cap_is_named_with_its_value() {
        let limits =
            Limits { max_content_blocks: 1, max_content_block_bytes: 100, max_content_bytes: 150, ..Limits::default() };
        let mut full = slot(limits);
        wit::Host::attach(&mut full, wit::Block::Text("x".repeat(100))).unwrap();
        let over = refused(&mut full, wit::Block::Text("y".into()));
        assert_eq!(over.kind, ErrorKind::OutputTooLarge);
        assert!(over.message.contains("content block 2 (text) is more than the 1 content blocks"), "{}", over.message);
        assert!(over.message.contains("max_content_blocks = 1"), "{}", over.message);

        let big = refused(&mut slot(limits), wit::Block::Text("x".repeat(101)));
        assert!(big.message.contains("content block 1 (text) holds 101 bytes"), "{}", big.message);
        assert!(big.message.contains("max_content_block_bytes = 100"), "{}", big.message);

        let limits = Limits { max_content_block_bytes: 100, max_content_bytes: 150, ..Limits::default() };
        let mut total = slot(limits);
        wit::Host::attach(&mut total, wit::Block::Text("x".repeat(100))).unwrap();
        let over = refused(&mut total, wit::Block::Text("x".repeat(51)));
        assert!(over.message.contains("brings the call's content blocks to 151 bytes"), "{}", over.message);
        assert!(over.message.contains("max_content_bytes = 150"), "{}", over.message);
    }

    #[test]
    fn pictures_and_sounds_are_what_they_declare() {
        let bomb = refused(&mut slot(Limits::default()), image("image/png", png_header(100_000, 100_000)));
        assert_eq!(bomb.kind, ErrorKind::OutputTooLarge);
        assert!(bomb.message.contains("a PNG of 100000 × 100000 pixels"), "{}", bomb.message);
        assert!(bomb.message.contains("max_image_pixels = 50000000"), "{}", bomb.message);

        let mut fake = png_header(1, 1)[..8].to_vec();
        fake.extend_from_slice(&[0x5A; 100]);
        let fake = refused(&mut slot(Limits::default()), image("image/png", fake));
        assert_eq!(fake.kind, ErrorKind::InvalidOutput);
        assert!(
            fake.message.contains(
                "content block 1 (image) declares the media type \"image/png\" but its 108 bytes are not a PNG"
            ),
            "{}",
            fake.message
        );

        let svg = refused(&mut slot(Limits::default()), image("image/svg+xml", b"<svg/>".to_vec()));
        assert!(svg.message.contains("accepted image/png, image/jpeg, image/gif, image/webp"), "{}", svg.message);

        let wav = wit::Block::Audio(wit::Media { mime_type: "audio/mpeg".into(), data: b"RIFF\0\0\0\0WAVE".to_vec() });
        let wav = refused(&mut slot(Limits::default()), wav);
        assert!(wav.message.contains("are not a MP3 (they look like a WAV)"), "{}", wav.message);
    }

    #[test]
    fn uris_and_media_types_are_checked() {
        let link = |uri: &str| {
            wit::Block::ResourceLink(wit::Link {
                uri: uri.into(),
                name: "a\nb".into(),
                title: None,
                description: None,
                mime_type: Some("application/pdf".into()),
                size: None,
            })
        };
        let mut ok = slot(Limits::default());
        wit::Host::attach(&mut ok, link("https://example.com/a.pdf")).unwrap();
        let Content::Link(kept) = ok.take().blocks[0].content().clone() else { panic!("not a link") };
        assert_eq!(kept.name, "a b", "names are one line");

        let data = refused(&mut slot(Limits::default()), link("data:text/html,<script>"));
        assert_eq!(data.kind, ErrorKind::InvalidOutput);
        assert!(
            data.message.contains("content block 1 (resource_link) has a URI of scheme \"data\""),
            "{}",
            data.message
        );
        assert!(data.message.contains(uri::LINK_RULE), "{}", data.message);

        let passwd = refused(&mut slot(Limits::default()), link("file:///etc/passwd"));
        assert!(passwd.message.contains("has a URI of scheme \"file\"; a resource link must be"), "{}", passwd.message);
        let metadata = refused(&mut slot(Limits::default()), link("http://169.254.169.254/latest/meta-data/"));
        assert_eq!(metadata.kind, ErrorKind::InvalidOutput);
        assert!(
            metadata.message.contains("has a URL whose host 169.254.169.254 is a cloud metadata address, not a public"),
            "{}",
            metadata.message
        );
        let userinfo = refused(&mut slot(Limits::default()), link("https://example.com@evil.example/"));
        assert!(userinfo.message.contains("a user name or password before its host"), "{}", userinfo.message);
        let local = refused(&mut slot(Limits::default()), link("http://localhost:8080/"));
        assert!(local.message.contains("whose host is localhost"), "{}", local.message);
        let mapped = refused(&mut slot(Limits::default()), link("http://[::ffff:10.0.0.1]/"));
        assert!(mapped.message.contains("is a private-network address"), "{}", mapped.message);

        let limits = Limits { max_uri_bytes: 10, ..Limits::default() };
        let long = refused(&mut slot(limits), link("https://example.com"));
        assert_eq!(long.kind, ErrorKind::OutputTooLarge);
        assert!(long.message.contains("max_uri_bytes = 10"), "{}", long.message);

        let embedded = wit::Block::Embedded(wit::Embedded {
            uri: "airlock:a.txt".into(),
            mime_type: Some("text plain".into()),
            body: wit::Body::Text("hi".into()),
        });
        let bad = refused(&mut slot(Limits::default()), embedded);
        assert!(
            bad.message.contains("content block 1 (resource) declares \"text plain\", which is not a media type"),
            "{}",
            bad.message
        );
    }

    #[test]
    fn after_a_refusal_nothing_is_kept_and_outside_a_call_nothing_is_attached() {
        let mut slot = slot(Limits::default());
        wit::Host::attach(&mut slot, wit::Block::Text("kept".into())).unwrap();
        assert!(wit::Host::attach(&mut slot, image("image/png", vec![1, 2, 3])).is_err());
        let again = wit::Host::attach(&mut slot, wit::Block::Text("late".into())).unwrap_err();
        assert!(again.starts_with("an earlier content block was refused"), "{again}");
        let attached = slot.take();
        assert!(attached.blocks.is_empty());
        assert!(attached.refused.unwrap().message.contains("content block 2 (image)"));

        let mut reading = ContentSlot::new(&Limits::default());
        let err = wit::Host::attach(&mut reading, wit::Block::Text("x".into())).unwrap_err();
        assert!(err.contains("no call is being served"), "{err}");
    }
}
