//! A successful result's content blocks as MCP content blocks, after the
//! result's text block, for the protocol revision of the request.
//!
//! Trusts the blocks as the sandbox checked them (sizes, media types,
//! URIs, cleaned text); what is left here is the wire's shape. Text goes as
//! a `text` block, the result's text and its text blocks together within
//! the model-text cap (`ModelText`), a picture as `image` and a
//! sound as `audio` (base64 `data` and `mimeType`), a link as
//! `resource_link`, an embedded resource as `resource` with `text` or a
//! base64 `blob`. A revision that has no block of that kind gets a one-line
//! `text` stand-in saying what was returned and that it cannot be shown:
//! `audio` came with 2025-03-26 and `resource_link` with 2025-06-18.

use airlock_core::content::{Block, Body, Content, ModelText};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{ContentBlock, ProtocolVersion, Resource, ResourceContents};

/// `blocks` as content blocks for a request of `revision` (`None`: the
/// newest), each block's bytes let go as it is encoded; text blocks within
/// what the model may still read of the result after its text
/// (`budget`).
pub(crate) fn render(
    blocks: Vec<Block>,
    revision: Option<&ProtocolVersion>,
    mut budget: ModelText,
) -> Vec<ContentBlock> {
    let revision = revision.cloned().unwrap_or(ProtocolVersion::LATEST);
    blocks.into_iter().map(|block| one(block, &revision, &mut budget)).collect()
}

/// One block for `revision`.
fn one(block: Block, revision: &ProtocolVersion, budget: &mut ModelText) -> ContentBlock {
    let has = |since: &ProtocolVersion| super::revision::has(Some(revision), since);
    let stand_in = |block: &Block| ContentBlock::text(block.stand_in(&format!("MCP {revision}")));
    match block.content() {
        Content::Audio(_) if !has(&super::revision::AUDIO) => return stand_in(&block),
        Content::Link(_) if !has(&super::revision::RESOURCE_LINK) => return stand_in(&block),
        _ => {}
    }
    let (content, _) = block.into_parts();
    match content {
        Content::Text(text) => ContentBlock::text(budget.take(&text)),
        Content::Image(media) => ContentBlock::image(BASE64.encode(&media.data), media.mime_type),
        Content::Audio(media) => ContentBlock::audio(BASE64.encode(&media.data), media.mime_type),
        Content::Link(link) => {
            let mut resource = Resource::new(link.uri, link.name);
            resource.title = link.title;
            resource.description = link.description;
            resource.mime_type = link.mime_type;
            resource.size = link.size;
            ContentBlock::resource_link(resource)
        }
        Content::Embedded(embedded) => ContentBlock::resource(match embedded.body {
            Body::Text(text) => ResourceContents::TextResourceContents {
                uri: embedded.uri,
                mime_type: embedded.mime_type,
                text,
                meta: None,
            },
            Body::Blob(data) => ResourceContents::BlobResourceContents {
                uri: embedded.uri,
                mime_type: embedded.mime_type,
                blob: BASE64.encode(&data),
                meta: None,
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::content::{Embedded, Link, Media};
    use serde_json::{Value, json};

    fn blocks() -> Vec<Block> {
        let block = |content| Block::new(content, "sha256:00".into());
        vec![
            block(Content::Text("caption".into())),
            block(Content::Image(Media { mime_type: "image/png".into(), data: vec![1, 2, 3] })),
            block(Content::Audio(Media { mime_type: "audio/wav".into(), data: vec![4] })),
            block(Content::Link(Link {
                uri: "https://example.com/r.pdf".into(),
                name: "r.pdf".into(),
                title: Some("Report".into()),
                description: None,
                mime_type: Some("application/pdf".into()),
                size: Some(10),
            })),
            block(Content::Embedded(Embedded {
                uri: "airlock:a.svg".into(),
                mime_type: Some("image/svg+xml".into()),
                body: Body::Text("<svg/>".into()),
            })),
            block(Content::Embedded(Embedded {
                uri: "airlock:a.bin".into(),
                mime_type: None,
                body: Body::Blob(vec![0]),
            })),
        ]
    }

    fn wire(revision: ProtocolVersion) -> Vec<Value> {
        render(blocks(), Some(&revision), ModelText::after(""))
            .iter()
            .map(|block| serde_json::to_value(block).unwrap())
            .collect()
    }

    #[test]
    fn every_kind_has_its_block_in_the_newest_revisions() {
        for revision in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
            let out = wire(revision);
            assert_eq!(out[0], json!({"type": "text", "text": "caption"}));
            assert_eq!(out[1], json!({"type": "image", "data": "AQID", "mimeType": "image/png"}));
            assert_eq!(out[2], json!({"type": "audio", "data": "BA==", "mimeType": "audio/wav"}));
            assert_eq!(
                out[3],
                json!({"type": "resource_link", "uri": "https://example.com/r.pdf", "name": "r.pdf", "title": "Report",
                       "mimeType": "application/pdf", "size": 10})
            );
            assert_eq!(
                out[4],
                json!({"type": "resource", "resource": {"uri": "airlock:a.svg", "mimeType": "image/svg+xml", "text": "<svg/>"}})
            );
            assert_eq!(out[5], json!({"type": "resource", "resource": {"uri": "airlock:a.bin", "blob": "AA=="}}));
        }
    }

    #[test]
    fn older_revisions_get_a_text_stand_in_for_what_they_lack() {
        let out = wire(ProtocolVersion::V_2025_03_26);
        assert_eq!(out[2]["type"], "audio", "audio is in 2025-03-26");
        assert_eq!(out[3]["type"], "text");
        assert_eq!(
            out[3]["text"],
            "[the tool returned a resource link to https://example.com/r.pdf (r.pdf, application/pdf, 10 bytes) that \
             MCP 2025-03-26 cannot show]"
        );
        let out = wire(ProtocolVersion::V_2024_11_05);
        assert_eq!(out[1]["type"], "image");
        assert_eq!(out[2]["type"], "text");
        assert!(
            out[2]["text"].as_str().unwrap().contains("an audio clip (audio/wav, 1 bytes, sha256:00)"),
            "{}",
            out[2]
        );
        assert_eq!(out[4]["type"], "resource");
    }
}
