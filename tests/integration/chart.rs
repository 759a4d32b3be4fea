//! The bundled `chart` tool through the library, as an embedder calls it:
//! the summary as the result, then the content blocks the tool attached, a
//! PNG image of the requested size (its header decoded) and, asked for, an
//! SVG resource that parses and names the title (by default the PNG alone);
//! bad input is a tool error naming the member, with no blocks. And `show()` of the interpreters, whose blocks
//! reach the result the same way.

use crate::support::{assert_failed, call, host, tool};
use airlock::content::{Body, Content};
use serde_json::{Value, json};

fn chart_host_config() -> String {
    format!("[tools.chart]\ncomponent = {:?}\nside_effect = false\n", tool("chart").display().to_string())
}

/// (width, height) from a PNG's IHDR chunk, after checking the signature.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(png.get(..8), Some(&b"\x89PNG\r\n\x1a\n"[..]), "a PNG signature");
    assert_eq!(png.get(12..16), Some(&b"IHDR"[..]));
    let word = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

#[tokio::test]
async fn chart_attaches_a_png_of_the_requested_size_and_an_svg_with_its_title() {
    let host = host(&chart_host_config()).await;
    let values: Vec<f64> = (0..1000).map(|i| (f64::from(i) / 40.0).sin() * 100.0).collect();
    let arguments = json!({
        "kind": "line",
        "title": "A thousand points",
        "series": [{"name": "sine", "values": values}],
        "x_label": "sample",
        "y_label": "value",
        "width": 900,
        "height": 400,
        "svg": true,
    });
    let result = call(&host, "chart", arguments).await;
    let success = result.result().unwrap_or_else(|failure| panic!("chart failed: {failure:?}"));
    let summary = &success.value;
    assert_eq!((summary["kind"].as_str(), summary["points"].as_u64()), (Some("line"), Some(1000)), "{summary}");
    assert_eq!((summary["width"].as_u64(), summary["height"].as_u64()), (Some(900), Some(400)));

    let contents: Vec<&Content> = success.blocks.iter().map(|b| b.content()).collect();
    assert_eq!(contents.len(), 2, "{:?}", contents.iter().map(|c| c.kind()).collect::<Vec<_>>());
    let Content::Image(png) = contents[0] else { panic!("the first block is not an image: {:?}", contents[0].kind()) };
    assert_eq!(png.mime_type, "image/png");
    assert_eq!(png_size(&png.data), (900, 400));
    assert_eq!(summary["png_bytes"], json!(png.data.len()));
    let Content::Embedded(svg) = contents[1] else {
        panic!("the second block is not a resource: {:?}", contents[1].kind())
    };
    assert_eq!((svg.uri.as_str(), svg.mime_type.as_deref()), ("airlock:chart/chart.svg", Some("image/svg+xml")));
    let Body::Text(text) = &svg.body else { panic!("the SVG is not text") };
    assert!(text.starts_with(r#"<svg width="900" height="400""#), "{}", &text[..80.min(text.len())]);
    assert!(text.contains("A thousand points") && text.trim_end().ends_with("</svg>"));
    assert_eq!(summary["svg_bytes"], json!(text.len()));
}

#[tokio::test]
async fn chart_returns_the_png_alone_unless_the_svg_is_asked_for() {
    let host = host(&chart_host_config()).await;
    let result = call(&host, "chart", json!({"kind": "bar", "series": [{"name": "a", "values": [3, 1, 2]}]})).await;
    let success = result.result().unwrap_or_else(|failure| panic!("chart failed: {failure:?}"));
    let kinds: Vec<_> = success.blocks.iter().map(|b| b.content().kind()).collect();
    assert_eq!(kinds.len(), 1, "{kinds:?}");
    assert!(matches!(success.blocks[0].content(), Content::Image(_)), "{kinds:?}");
    assert!(success.value.get("svg_bytes").is_none(), "{}", success.value);
}

#[tokio::test]
async fn bad_chart_input_is_a_tool_error_naming_the_member_with_no_blocks() {
    let host = host(&chart_host_config()).await;
    let cases: [(Value, &str); 3] = [
        (
            json!({"kind": "bar", "series": [{"name": "a", "values": [1, 2]}, {"name": "b", "values": [1]}]}),
            "series[1] has 1 values and series[0] has 2",
        ),
        (json!({"kind": "scatter", "series": [{"name": "a", "values": [1]}]}), "give `points`"),
        (
            json!({"kind": "line", "series": [{"name": "a", "values": [1, 2]}], "labels": ["one"]}),
            "`labels` has 1 labels and the series have 2 values each",
        ),
    ];
    for (arguments, needle) in cases {
        let result = call(&host, "chart", arguments).await;
        assert_failed(&result, "tool_error", needle);
        assert_eq!(result.code(), Some("invalid_chart"));
    }
    // The schema refuses sizes out of range before the tool runs.
    let result =
        call(&host, "chart", json!({"kind": "line", "series": [{"name": "a", "values": [1]}], "width": 5000})).await;
    assert_failed(&result, "invalid_arguments", "width");
}

#[tokio::test]
async fn show_in_run_python_and_run_js_attaches_what_the_code_made() {
    let text = format!(
        "[tools.run_python]\ncomponent = {:?}\nside_effect = false\nmemory_mib = 512\ntimeout_ms = 30000\n\
         [tools.run_js]\ncomponent = {:?}\nside_effect = false\n",
        tool("run_python").display().to_string(),
        tool("run_js").display().to_string(),
    );
    let host = host(&text).await;
    let python = "import struct, zlib\n\
        def chunk(kind, data):\n    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))\n\
        png = (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 3, 2, 8, 2, 0, 0, 0))\n       \
        + chunk(b'IDAT', zlib.compress(b'\\x00' + b'\\xff' * 9 + b'\\x00' + b'\\x00' * 9)) + chunk(b'IEND', b''))\n\
        show(png, 'image/png')\n\
        show('<svg xmlns=\"http://www.w3.org/2000/svg\"/>', 'image/svg+xml')\n\
        len(png)";
    let result = call(&host, "run_python", json!({"code": python})).await;
    let success = result.result().unwrap_or_else(|failure| panic!("run_python failed: {failure:?}"));
    assert!(success.value.get("error").is_none(), "{}", success.value);
    let contents: Vec<&Content> = success.blocks.iter().map(|b| b.content()).collect();
    let Some(Content::Image(png)) = contents.first() else { panic!("no image: {contents:?}") };
    assert_eq!(png_size(&png.data), (3, 2));
    let Some(Content::Embedded(svg)) = contents.get(1) else { panic!("no SVG: {contents:?}") };
    assert_eq!(svg.mime_type.as_deref(), Some("image/svg+xml"));

    let js = "show(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), 'image/x-unknown'); 1";
    let result = call(&host, "run_js", json!({"code": js})).await;
    let success = result.result().unwrap_or_else(|failure| panic!("run_js failed: {failure:?}"));
    assert_eq!(success.blocks.len(), 1, "{}", success.value);
}
