use super::*;
use airlock_guest::content::{Body, take_attached};
use serde_json::json;

fn args(value: serde_json::Value) -> Args {
    serde_json::from_value(value).unwrap()
}

/// Run the tool natively and return its summary, the PNG and the SVG it
/// attached (when asked for).
fn run_as_given(value: serde_json::Value) -> (Summary, Vec<u8>, Option<String>) {
    let summary = chart(args(value)).unwrap();
    let mut attached = take_attached().into_iter();
    let Some(Content::Image { mime_type, data: png }) = attached.next() else { panic!("no image attached") };
    assert_eq!(mime_type, "image/png");
    let svg = attached.next().map(|svg| {
        let Content::Embedded { uri, mime_type, body: Body::Text(svg) } = svg else { panic!("not an SVG: {svg:?}") };
        assert_eq!((uri.as_str(), mime_type.as_deref()), (SVG_URI, Some("image/svg+xml")));
        svg
    });
    assert!(attached.next().is_none());
    assert_eq!(summary.svg_bytes, svg.as_ref().map(String::len));
    (summary, png, svg)
}

/// Run the tool asking for the SVG too: its summary, the PNG and the SVG.
fn run(mut value: serde_json::Value) -> (Summary, Vec<u8>, String) {
    value["svg"] = json!(true);
    let (summary, png, svg) = run_as_given(value);
    (summary, png, svg.expect("no SVG attached"))
}

#[test]
fn by_default_the_chart_is_a_png_alone() {
    for value in [
        json!({"kind": "bar", "series": [{"name": "a", "values": [1, 2]}]}),
        json!({"kind": "bar", "series": [{"name": "a", "values": [1, 2]}], "svg": null}),
        json!({"kind": "bar", "series": [{"name": "a", "values": [1, 2]}], "svg": false}),
    ] {
        let (summary, png, svg) = run_as_given(value.clone());
        assert!(svg.is_none(), "{value}");
        assert_eq!(decode(&png).0, DEFAULT_WIDTH, "{value}");
        let shown = serde_json::to_value(&summary).unwrap();
        assert!(shown.get("svg_bytes").is_none(), "{shown}");
    }
}

/// The PNG's width, height and colour type, decoded (its data too).
fn decode(png_bytes: &[u8]) -> (u32, u32, png::ColorType) {
    let decoder = png::Decoder::new(png_bytes);
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    (frame.width, frame.height, frame.color_type)
}

fn refusal(value: serde_json::Value) -> String {
    let err = chart(args(value)).unwrap_err();
    assert_eq!(err.code.as_deref(), Some(spec::INVALID), "{err}");
    assert!(take_attached().is_empty(), "a refused chart attaches nothing");
    err.message
}

#[test]
fn a_line_chart_is_a_png_of_the_requested_size_and_an_svg_with_its_title() {
    let (summary, png, svg) = run(json!({
        "kind": "line",
        "series": [
            {"name": "2025", "values": [3, 5, 2, 8]},
            {"name": "2026", "values": [4, 6, 7, 9.5]}
        ],
        "labels": ["Q1", "Q2", "Q3", "Q4"],
        "title": "Revenue by quarter",
        "x_label": "Quarter",
        "y_label": "Revenue (M€)",
        "width": 640,
        "height": 360
    }));
    assert_eq!(decode(&png), (640, 360, png::ColorType::Rgb));
    let document = roxmltree::Document::parse(&svg).unwrap();
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!((root.attribute("width"), root.attribute("height")), (Some("640"), Some("360")));
    let texts: Vec<&str> =
        document.descendants().filter(|n| n.has_tag_name("text")).filter_map(|n| n.text()).map(str::trim).collect();
    for expected in ["Revenue by quarter", "Quarter", "Revenue (M€)", "Q1", "Q4", "2025", "2026"] {
        assert!(texts.contains(&expected), "{expected} is not among {texts:?}");
    }
    assert_eq!(
        summary,
        Summary {
            kind: Kind::Line,
            series: 2,
            points: 8,
            width: 640,
            height: 360,
            y: Range { min: 2.0, max: 9.5 },
            x: None,
            png_bytes: png.len(),
            svg_bytes: Some(svg.len()),
        }
    );
}

#[test]
fn text_is_drawn_into_the_png() {
    let plain = json!({"kind": "bar", "series": [{"name": "", "values": [1, 2]}], "width": 300, "height": 200});
    let mut titled = plain.clone();
    titled["title"] = json!("A title in black");
    let pixels = |value: serde_json::Value| {
        let (_, png, _) = run(value);
        let mut reader = png::Decoder::new(png.as_slice()).read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size()];
        reader.next_frame(&mut pixels).unwrap();
        pixels
    };
    let (plain, titled) = (pixels(plain), pixels(titled));
    // The title's glyphs are dark pixels in the top rows, which hold
    // little else.
    let top = 300 * 3 * 25;
    let dark = |pixels: &[u8]| pixels[..top].chunks(3).filter(|p| p.iter().all(|&c| c < 100)).count();
    assert!(dark(&titled) > dark(&plain) + 50, "{} {}", dark(&titled), dark(&plain));
}

#[test]
fn bar_and_scatter_charts_are_drawn() {
    let (summary, png, svg) = run(json!({
        "kind": "bar",
        "series": [{"name": "apples", "values": [3, -1, 4]}, {"name": "pears", "values": [2, 2, 0]}],
        "labels": ["north", "south", "east"],
    }));
    assert_eq!(decode(&png), (DEFAULT_WIDTH, DEFAULT_HEIGHT, png::ColorType::Rgb));
    assert!(roxmltree::Document::parse(&svg).is_ok());
    assert_eq!((summary.points, summary.y), (6, Range { min: -1.0, max: 4.0 }));

    let (summary, png, svg) = run(json!({
        "kind": "scatter",
        "series": [{"name": "samples", "points": [{"x": -2.5, "y": 1}, {"x": 10, "y": 1e6}, {"x": 3, "y": 0.001}]}],
        "width": 100,
        "height": 2000,
    }));
    assert_eq!(decode(&png), (100, 2000, png::ColorType::Rgb));
    assert!(roxmltree::Document::parse(&svg).is_ok());
    assert_eq!(summary.x, Some(Range { min: -2.5, max: 10.0 }));
    assert_eq!(summary.y, Range { min: 0.001, max: 1e6 });
}

#[test]
fn one_point_and_equal_values_still_have_axes() {
    for value in [
        json!({"kind": "line", "series": [{"name": "one", "values": [5]}]}),
        json!({"kind": "line", "series": [{"name": "flat", "values": [0, 0, 0]}]}),
        json!({"kind": "scatter", "series": [{"name": "p", "points": [{"x": 1, "y": 1}]}]}),
        json!({"kind": "bar", "series": [{"name": "neg", "values": [-3, -1]}]}),
    ] {
        let (_, png, svg) = run(value.clone());
        assert_eq!(decode(&png).0, DEFAULT_WIDTH, "{value}");
        assert!(roxmltree::Document::parse(&svg).is_ok(), "{value}");
    }
}

#[test]
fn a_thousand_point_line_chart_stays_small() {
    let values: Vec<f64> = (0..1000).map(|i| (f64::from(i) / 40.0).sin() * 100.0).collect();
    let (summary, png, svg) = run(json!({"kind": "line", "series": [{"name": "sine", "values": values}]}));
    assert_eq!(summary.points, 1000);
    assert!(png.len() < 200_000, "{}", png.len());
    assert!(svg.len() < 200_000, "{}", svg.len());
}

#[test]
fn progress_is_reported_and_a_line_is_logged() {
    let _ = airlock_guest::progress::take_reports();
    let _ = airlock_guest::log::take_lines();
    run(json!({"kind": "line", "series": [{"name": "a", "values": [1, 2]}]}));
    let reports = airlock_guest::progress::take_reports();
    assert_eq!(reports.iter().map(|r| r.0).collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
    assert!(reports.iter().all(|r| r.1 == Some(3.0)));
    let lines = airlock_guest::log::take_lines();
    assert_eq!(lines.len(), 1);
    assert!(lines[0].1.starts_with("line chart of 2 points in 1 series"), "{lines:?}");
}

#[test]
fn bad_input_is_refused_naming_the_member_and_what_is_accepted() {
    let check = |value: serde_json::Value, expected: &str| {
        let message = refusal(value.clone());
        assert!(message.contains(expected), "{value}: {message}");
    };
    check(json!({"kind": "line", "series": []}), "`series` is empty");
    check(json!({"kind": "line", "series": [{"name": "a", "values": []}]}), "`series[0].values` is empty");
    check(json!({"kind": "line", "series": [{"name": "a"}]}), "series[0] gives neither `values` nor `points`");
    check(
        json!({"kind": "line", "series": [{"name": "a", "values": [1], "points": [{"x": 1, "y": 1}]}]}),
        "series[0] gives both",
    );
    check(json!({"kind": "scatter", "series": [{"name": "a", "values": [1]}]}), "give `points`");
    check(json!({"kind": "bar", "series": [{"name": "a", "points": [{"x": 1, "y": 1}]}]}), "give `values`");
    check(
        json!({"kind": "line", "series": [{"name": "a", "values": [1, 2]}, {"name": "b", "values": [1]}]}),
        "series[1] has 1 values and series[0] has 2",
    );
    check(
        json!({"kind": "line", "series": [{"name": "a", "values": [1]}, {"name": "b", "points": [{"x": 1, "y": 1}]}]}),
        "series[0] gives `values` and series[1] gives `points`",
    );
    check(
        json!({"kind": "bar", "series": [{"name": "a", "values": [1, 2]}], "labels": ["x"]}),
        "`labels` has 1 labels and the series have 2 values each",
    );
    check(
        json!({"kind": "scatter", "series": [{"name": "a", "points": [{"x": 1, "y": 1}]}], "labels": ["x"]}),
        "leave `labels` out",
    );
    check(json!({"kind": "line", "series": [{"name": "a", "values": [1]}], "width": 99}), "`width` is 99 pixels");
    check(json!({"kind": "line", "series": [{"name": "a", "values": [1]}], "height": 2001}), "give 100 to 2000");
    check(
        json!({"kind": "line", "series": [{"name": "a", "values": [1]}], "title": "t".repeat(201)}),
        "`title` is 201 characters long; at most 200",
    );
    check(json!({"kind": "line", "series": [{"name": "a", "values": [1, 1e301]}]}), "`series[0].values[1]` is 1e301");
    let many: Vec<serde_json::Value> = (0..11).map(|i| json!({"name": i.to_string(), "values": [1]})).collect();
    check(json!({"kind": "line", "series": many}), "at most 10 are drawn");
    let long = vec![1.0; MAX_POINTS_PER_SERIES + 1];
    check(json!({"kind": "line", "series": [{"name": "a", "values": long}]}), "a series has at most 5000");
    let full = vec![1.0; MAX_POINTS_PER_SERIES];
    let three: Vec<serde_json::Value> = (0..3).map(|i| json!({"name": i.to_string(), "values": full})).collect();
    check(json!({"kind": "line", "series": three}), "more than 10000 points in all");
}

#[test]
fn nan_and_infinite_values_are_refused() {
    // JSON has no NaN or infinity; a value that is not finite can only come
    // from another caller of the function, and is refused all the same.
    for (value, expected) in [(f64::NAN, "is not a number (NaN)"), (f64::INFINITY, "is infinite")] {
        let args = Args {
            kind: Kind::Scatter,
            series: vec![Series { name: "a".into(), values: None, points: Some(vec![Point { x: 1.0, y: value }]) }],
            labels: None,
            title: None,
            x_label: None,
            y_label: None,
            width: None,
            height: None,
            svg: None,
        };
        let err = chart(args).unwrap_err();
        assert!(err.message.contains(&format!("`series[0].points[0].y` {expected}")), "{}", err.message);
    }
}

#[test]
fn the_schema_states_the_caps() {
    let schema: serde_json::Value =
        serde_json::from_str(&airlock_guest::__private::parameters(&(chart as fn(Args) -> _))).unwrap();
    let properties = &schema["properties"];
    assert_eq!(schema["required"], json!(["kind", "series"]));
    assert_eq!(properties["kind"]["enum"], json!(["line", "bar", "scatter"]));
    assert_eq!(
        (properties["series"]["minItems"].clone(), properties["series"]["maxItems"].clone()),
        (json!(1), json!(10))
    );
    let series = &properties["series"]["items"]["properties"];
    assert_eq!(series["values"]["maxItems"], json!(MAX_POINTS_PER_SERIES));
    assert_eq!(series["points"]["maxItems"], json!(MAX_POINTS_PER_SERIES));
    for side in ["width", "height"] {
        // The tool refuses sizes under 100 itself (see `Args::width`).
        assert_eq!((properties[side]["minimum"].clone(), properties[side]["maximum"].clone()), (json!(1), json!(2000)));
        assert!(properties[side]["description"].as_str().unwrap().contains("100 to 2000"), "{side}");
    }
    assert_eq!(properties["title"]["maxLength"], json!(MAX_TEXT_CHARS));
    assert_eq!(properties["svg"]["type"], json!(["boolean", "null"]), "the SVG is optional");
    assert!(!schema.to_string().contains("$ref"), "{schema}");
}

#[test]
fn extreme_values_are_drawn() {
    for values in [json!([-1e300, 1e300]), json!([1e-300, 2e-300]), json!([5e-324, 0]), json!([1e300, 1e300])] {
        let (summary, png, svg) = run(json!({"kind": "line", "series": [{"name": "", "values": values}]}));
        assert_eq!(decode(&png).0, DEFAULT_WIDTH, "{values}");
        assert!(roxmltree::Document::parse(&svg).is_ok(), "{values}");
        assert_eq!(summary.points, 2);
        let points: Vec<serde_json::Value> =
            values.as_array().unwrap().iter().map(|v| json!({"x": v, "y": v})).collect();
        let (_, png, _) = run(json!({"kind": "scatter", "series": [{"name": "", "points": points}]}));
        assert_eq!(decode(&png).0, DEFAULT_WIDTH, "{values}");
    }
}

#[test]
fn the_smallest_picture_with_every_text_at_its_longest_is_drawn() {
    let long = "W".repeat(MAX_TEXT_CHARS);
    let series: Vec<serde_json::Value> =
        (0..MAX_SERIES).map(|i| json!({"name": format!("{i}{}", &long[1..]), "values": [i, -1e12, 3e-9]})).collect();
    for kind in ["line", "bar"] {
        let (summary, png, svg) = run(json!({
            "kind": kind,
            "series": series,
            "labels": [long, long, long],
            "title": long,
            "x_label": long,
            "y_label": long,
            "width": MIN_SIDE,
            "height": MIN_SIDE,
        }));
        assert_eq!(decode(&png), (MIN_SIDE, MIN_SIDE, png::ColorType::Rgb), "{kind}");
        assert!(roxmltree::Document::parse(&svg).is_ok(), "{kind}");
        assert_eq!(summary.points, 30);
    }
}
