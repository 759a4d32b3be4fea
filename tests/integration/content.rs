//! Content blocks (`airlock:tool/content`, contract 0.3.0): what a tool
//! attaches beside its result reaches every front end (the library, MCP
//! over HTTP, the provider formats, `airlock call`), is recorded in the
//! audit log by kind, type, size and digest only, and whatever a hostile
//! guest attaches (100 MB, a forged PNG, a decompression bomb, too many
//! blocks, blocks before an error) ends in a clear result with the host
//! within its caps.
//!
//! Nothing here depends on machine speed: kinds, messages and byte counts
//! are asserted, and which cap fires is decided by the sizes alone.

use crate::cli::{airlock, json_out};
use crate::service::{Mcp, Served, kind, wait_ready};
use crate::support::{assert_failed, cache_dir, call, fixture, host, temp_dir};
use airlock::content::{Content, Kind};
use airlock::{CallRequest, Contract, ToolResult};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const MIB: u64 = 1 << 20;

/// The 1 × 1 red PNG the image fixtures attach.
const PIXEL: &[u8] = include_bytes!("../fixtures/media/red-pixel.png");
/// The WAV the audio fixture attaches.
const TONE: &[u8] = include_bytes!("../fixtures/media/tone.wav");

/// Config text with the content fixtures and `hostile` (with `extra` keys
/// for it).
fn content_config(extra: &str) -> String {
    let fixtures = [
        ("test_image_content", "conformance_image"),
        ("test_audio_content", "conformance_audio"),
        ("test_embedded_resource", "conformance_resource"),
        ("test_multiple_content_types", "conformance_mixed"),
    ];
    let mut text = String::from("builtin_settings = false\n");
    for (name, crate_name) in fixtures {
        text.push_str(&format!(
            "[tools.{name}]\ncomponent = {:?}\nside_effect = false\n",
            fixture(crate_name).display().to_string()
        ));
    }
    text.push_str(&format!(
        "[tools.hostile]\ncomponent = {:?}\nside_effect = false\nmemory_mib = 256\n{extra}\n",
        fixture("hostile").display().to_string()
    ));
    text
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The blocks of a successful result.
fn blocks(result: &ToolResult) -> Vec<Content> {
    assert!(!result.is_error(), "{}", result.text());
    result.result().map(|success| success.blocks.iter().map(|b| b.content().clone()).collect()).unwrap_or_default()
}

#[tokio::test]
async fn each_kind_of_block_reaches_the_caller_as_attached() {
    let host = host(&content_config("")).await;
    assert_eq!(host.tools().get("test_image_content").expect("loaded").contract(), Contract::V0_3);
    let image = call(&host, "test_image_content", json!({})).await;
    let attached = blocks(&image);
    let [Content::Image(media)] = attached.as_slice() else { panic!("one image: {attached:?}") };
    assert_eq!((media.mime_type.as_str(), media.data.as_slice()), ("image/png", PIXEL));
    let summary = image.result().expect("ok").blocks[0].summary();
    assert_eq!((summary.kind, summary.size, summary.sha256), (Kind::Image, PIXEL.len() as u64, sha256(PIXEL)));

    let audio = call(&host, "test_audio_content", json!({})).await;
    let attached = blocks(&audio);
    let [Content::Audio(media)] = attached.as_slice() else { panic!("one sound: {attached:?}") };
    assert_eq!((media.mime_type.as_str(), media.data.as_slice()), ("audio/wav", TONE));

    let mixed = call(&host, "test_multiple_content_types", json!({})).await;
    let kinds: Vec<Kind> = blocks(&mixed).iter().map(Content::kind).collect();
    assert_eq!(kinds, [Kind::Text, Kind::Image, Kind::Resource], "in the order attached");
    assert_eq!(mixed.value(), Some(&json!("Three content blocks follow.")), "the result is unchanged");
}

#[tokio::test]
async fn a_png_header_on_random_bytes_is_not_a_png() {
    let host = host(&content_config("")).await;
    let result = call(&host, "hostile", json!({"attack": "fake_png"})).await;
    assert_failed(&result, "invalid_output", "content block 1 (image) declares the media type \"image/png\"");
    assert!(result.text().contains("its 4104 bytes are not a PNG"), "{}", result.text());
}

#[tokio::test]
async fn a_png_declaring_100000_by_100000_pixels_is_refused_from_its_header() {
    let host = host(&content_config("")).await;
    let result = call(&host, "hostile", json!({"attack": "png_bomb"})).await;
    assert_failed(&result, "output_too_large", "a PNG of 100000 × 100000 pixels");
    assert!(result.text().contains("max_image_pixels = 50000000"), "{}", result.text());
    assert!(result.text().contains("without decoding it"), "{}", result.text());
    // No operator setting lets it through: the cap's ceiling, 2^32
    // pixels, is far below 10^10.
    let lenient = host_with("max_image_pixels = 4294967296").await;
    let result = call(&lenient, "hostile", json!({"attack": "png_bomb"})).await;
    assert_failed(&result, "output_too_large", "max_image_pixels = 4294967296");
}

async fn host_with(extra: &str) -> airlock::Host {
    host(&content_config(extra)).await
}

#[tokio::test]
async fn an_image_over_the_block_cap_is_refused_by_name_at_attach() {
    // 2 MiB: within what one host call may carry (5 MiB here), over the
    // 1 MiB a block may hold, so the host's own check refuses it.
    let host = host_with("max_content_block_bytes = 1048576").await;
    let result = call(&host, "hostile", json!({"attack": "huge_image", "bytes": 2 * MIB})).await;
    assert_failed(&result, "output_too_large", "content block 1 (image) holds 2097161 bytes");
    assert!(result.text().contains("max_content_block_bytes = 1048576"), "{}", result.text());
    assert_eq!(call(&host, "hostile", json!({"attack": "ok"})).await.outcome_name(), "ok");
}

#[tokio::test]
async fn a_refused_block_fails_the_call_whatever_the_tool_returns() {
    // The guest ignores every refusal and returns a result as if all was
    // well: the call still fails, naming the first block refused.
    let host = host_with("max_content_blocks = 3").await;
    let result = call(&host, "hostile", json!({"attack": "many_blocks", "count": 10})).await;
    assert_failed(&result, "output_too_large", "content block 4 (text) is more than the 3 content blocks");
    assert!(result.text().contains("max_content_blocks = 3"), "{}", result.text());
    // Within the cap the same guest succeeds with its blocks.
    let fits = call(&host, "hostile", json!({"attack": "many_blocks", "count": 3})).await;
    assert_eq!(blocks(&fits).len(), 3);
    assert_eq!(fits.value(), Some(&json!({"value": 3})));
}

#[tokio::test]
async fn a_link_a_client_should_not_open_fails_the_call_saying_what_a_link_may_be() {
    let host = host_with("").await;
    let link = |uri: &'static str| json!({"attack": "link_to", "content": uri});
    let rule = "a resource link must be an https: or http: URL of a public host";
    let file = call(&host, "hostile", link("file:///etc/passwd")).await;
    assert_failed(&file, "invalid_output", "content block 1 (resource_link) has a URI of scheme \"file\"");
    assert!(file.text().contains(rule), "{}", file.text());
    assert!(file.result().is_err(), "no block of the call is returned");
    let metadata = call(&host, "hostile", link("http://169.254.169.254/latest/meta-data/")).await;
    assert_failed(&metadata, "invalid_output", "whose host 169.254.169.254 is a cloud metadata address");
    assert!(metadata.text().contains(rule), "{}", metadata.text());
    for (uri, why) in [
        ("http://127.0.0.1:8080/admin", "is a loopback address"),
        ("http://[::ffff:192.168.0.1]/", "is a private-network address"),
        ("http://localhost/", "whose host is localhost"),
        ("https://user:pass@example.com/", "a user name or password before its host"),
    ] {
        assert_failed(&call(&host, "hostile", link(uri)).await, "invalid_output", why);
    }
    let public = call(&host, "hostile", link("https://example.com/report.pdf")).await;
    let Some(Content::Link(kept)) = blocks(&public).into_iter().next() else { panic!("a link: {}", public.text()) };
    assert_eq!(kept.uri, "https://example.com/report.pdf");
}

#[tokio::test]
async fn a_call_that_fails_after_attaching_returns_no_blocks() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let config = content_config(&format!("[audit]\nfile = {:?}\n", audit.display().to_string()));
    let host = host(&config).await;
    let result = call(&host, "hostile", json!({"attack": "attach_then_error"})).await;
    assert_failed(&result, "tool_error", "the tool failed after attaching a picture");
    assert!(result.result().is_err(), "a failure has no blocks to carry");
    let record = std::fs::read_to_string(&audit).expect("the audit log");
    assert!(!record.contains("\"content\""), "a failed call records no blocks: {record}");
}

#[tokio::test]
async fn the_audit_record_keeps_each_blocks_kind_type_size_and_digest_never_its_bytes() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let config = content_config(&format!("[audit]\nfile = {:?}\n", audit.display().to_string()));
    let host = host(&config).await;
    assert!(!call(&host, "test_multiple_content_types", json!({})).await.is_error());
    drop(host);
    let text = std::fs::read_to_string(&audit).expect("the audit log");
    let record: Value = serde_json::from_str(text.lines().last().expect("a record")).expect("JSON");
    assert_eq!(
        record["content"],
        json!([
            {"kind": "text", "media_type": "text/plain", "size": 28, "sha256": sha256(b"Multiple content types test:")},
            {"kind": "image", "media_type": "image/png", "size": PIXEL.len(), "sha256": sha256(PIXEL)},
            {"kind": "resource", "media_type": "application/json", "size": 27,
             "sha256": sha256(br#"{"test":"data","value":123}"#)},
        ])
    );
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(PIXEL);
    assert!(!text.contains(&encoded) && !text.contains("Multiple content types test:"), "no bytes: {text}");
    let report = airlock::audit_verify(&audit).expect("the chain verifies");
    assert_eq!(report.records, 1);
}

#[tokio::test]
async fn every_call_of_a_0_3_0_component_reserves_its_content_caps() {
    // 64 MiB of content, three times over, does not fit a 150 MiB budget
    // beside the call's other needs: the call is refused before it runs,
    // naming the content caps. A 0.1.0 component under the same limits
    // cannot attach anything and reserves nothing for it.
    let config = format!(
        "builtin_settings = false\n[engine]\ncache_dir = {:?}\nmemory_budget_mib = 150\n\
         [defaults]\nmax_content_bytes = 67108864\nmemory_mib = 16\nhost_memory_mib = 4\n\
         [tools.test_image_content]\ncomponent = {:?}\nside_effect = false\n\
         [tools.legacy_echo]\ncomponent = {:?}\nside_effect = false\n",
        cache_dir().display().to_string(),
        fixture("conformance_image").display().to_string(),
        fixture("contract_v0_1").display().to_string(),
    );
    let host = host(&config).await;
    let image = call(&host, "test_image_content", json!({})).await;
    assert_failed(&image, "internal", "output and content caps");
    let legacy = call(&host, "legacy_echo", json!({"text": "hi"})).await;
    assert_eq!(legacy.outcome_name(), "ok", "{}", legacy.text());
}

#[test]
fn mcp_clients_get_each_block_after_the_text_and_a_100_mb_image_costs_the_host_nothing() {
    let dir = temp_dir();
    let server = Served::start_in(dir, &content_config(""), &["serve", "--http", "127.0.0.1:0"]);
    let pid = server.child.id();
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let mcp = Mcp::connect(&addr, None);

    let mixed = mcp.call(1, "test_multiple_content_types", json!({}), &[]);
    assert_eq!(kind(&mixed), "ok", "{mixed}");
    let content = mixed["content"].as_array().expect("content");
    let types: Vec<&str> = content.iter().filter_map(|block| block["type"].as_str()).collect();
    assert_eq!(types, ["text", "text", "image", "resource"], "the result's text, then each block: {mixed}");
    assert_eq!(content[1]["text"], "Multiple content types test:");
    use base64::Engine as _;
    assert_eq!(content[2]["data"], base64::engine::general_purpose::STANDARD.encode(PIXEL));
    assert_eq!(content[2]["mimeType"], "image/png");
    assert_eq!(
        content[3]["resource"],
        json!({"uri": "airlock:mixed-content-resource.json", "mimeType": "application/json", "text": r#"{"test":"data","value":123}"#})
    );

    // 100 MB attached at once is more than one host call may carry: the
    // guest is stopped before the host copies any of it. The server's peak
    // holds the guest's own 100 MB and not a second copy.
    let before = peak_rss(pid);
    let huge = mcp.call(2, "hostile", json!({"attack": "huge_image"}), &[]);
    assert_eq!(kind(&huge), "output_too_large", "{huge}");
    let said = huge.to_string();
    assert!(said.contains("stopped before the host took any of it"), "{said}");
    assert!(said.contains("max_content_block_bytes"), "{said}");
    let peak = peak_rss(pid);
    eprintln!(
        "a 100 MB image: server peak RSS {} MiB (the guest's linear memory included), {} MiB before the call",
        peak / MIB,
        before / MIB
    );
    assert!(peak < 200 * MIB, "peak RSS {} MiB: the host copied the image", peak / MIB);
    let after = mcp.call(3, "hostile", json!({"attack": "ok"}), &[]);
    assert_eq!(kind(&after), "ok", "the host still serves: {after}");
    // A tool first served from its baseline build may still be compiling
    // its optimized build in the background, which holds a compile
    // reservation until it ends: wait for that, not for a time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let metrics = crate::service::request(&addr, "GET", "/metrics", &[], "").body;
        let reserved = metrics.lines().find(|l| l.starts_with("airlock_memory_reserved_bytes ")).unwrap_or_default();
        if reserved == "airlock_memory_reserved_bytes 0" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "every reservation was given back: {reserved}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The peak resident memory of process `pid` (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next());
    kib.and_then(|k| k.parse::<u64>().ok()).map_or(0, |k| k * 1024)
}

#[test]
fn airlock_call_summarises_the_blocks_and_writes_them_to_a_directory() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("airlock.toml"), content_config("")).expect("config");
    let out = airlock(
        dir.path(),
        &["--config", "airlock.toml", "call", "test_multiple_content_types", "{}", "--content-dir", "blocks"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let answer = json_out(&out);
    assert_eq!(answer["content"], "Three content blocks follow.");
    let listed = answer["blocks"].as_array().expect("blocks");
    assert_eq!(
        listed[1]["summary"],
        format!("block 2: image image/png, {} bytes, {}", PIXEL.len(), sha256(PIXEL)).as_str()
    );
    assert_eq!(std::fs::read(dir.path().join("blocks/2-image.png")).expect("the picture"), PIXEL);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("blocks/3-resource.json")).expect("the resource"),
        r#"{"test":"data","value":123}"#
    );
    // Without blocks, the answer is as it always was.
    let plain = airlock(dir.path(), &["--config", "airlock.toml", "call", "hostile", r#"{"attack":"ok"}"#], "");
    assert_eq!(json_out(&plain), json!({"is_error": false, "kind": "ok", "content": {"value": 1}}));
}

#[test]
fn provider_messages_carry_pictures_where_the_format_can() {
    let dir = temp_dir();
    std::fs::write(dir.path().join("airlock.toml"), content_config("")).expect("config");
    let anthropic = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "test_image_content", "input": {}}]});
    let out =
        airlock(dir.path(), &["--config", "airlock.toml", "dispatch", "--format", "anthropic"], &anthropic.to_string());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let result = &json_out(&out)[0]["content"][0];
    use base64::Engine as _;
    assert_eq!(
        result["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
               "data": base64::engine::general_purpose::STANDARD.encode(PIXEL)}})
    );
    let openai = json!({"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "test_audio_content", "arguments": "{}"}}]});
    let out = airlock(dir.path(), &["--config", "airlock.toml", "dispatch", "--format", "openai"], &openai.to_string());
    let text = json_out(&out)[0]["content"].as_str().expect("text").to_owned();
    assert_eq!(
        text,
        format!(
            "A tenth of a second of 440 Hz follows.\n\n[the tool returned an audio clip (audio/wav, {} bytes, {}) that \
             OpenAI Chat Completions cannot show]",
            TONE.len(),
            sha256(TONE)
        )
    );
}

#[tokio::test]
async fn a_library_caller_reads_the_blocks_with_the_result() {
    let host = host(&content_config("")).await;
    let request = CallRequest::new("alice", "test_embedded_resource", json!({}));
    let result = host.call(request, None).await;
    let attached = blocks(&result);
    let [Content::Embedded(embedded)] = attached.as_slice() else { panic!("one resource: {attached:?}") };
    assert_eq!(embedded.uri, "airlock:embedded-resource.txt");
    assert_eq!(embedded.mime_type.as_deref(), Some("text/plain"));
}
