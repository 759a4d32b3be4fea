//! `chart`: draws a line, bar or scatter chart from numbers and returns it
//! as a PNG image block, and as an SVG embedded resource (`image/svg+xml`)
//! too when the call asks for it (`svg: true`), beside a small JSON summary
//! of what was drawn. A pure tool: it touches no files, environment or
//! network.
//!
//! The SVG is markup: a client that cannot show an image resource hands
//! its text to the model (opencode, Gemini CLI and fast-agent paste the
//! 5 KB of a small chart into its context, Continue its base64), so it is
//! drawn only on request; the PNG is what every client shows.
//!
//! The chart is drawn with `plotters` (its bitmap and SVG backends); text
//! on the bitmap is drawn from a font compiled into the component
//! (`fonts/`), since the sandbox has none.
//!
//! # Security
//!
//! Every argument comes from the model and is untrusted. Sizes are capped
//! in the schema the host validates before the tool runs, and checked
//! again here ([`spec`]): at most [`MAX_SERIES`] series of at most
//! [`MAX_POINTS_PER_SERIES`] points, [`MAX_TOTAL_POINTS`] in all, texts of
//! at most [`MAX_TEXT_CHARS`] characters, a picture of
//! [`MIN_SIDE`]–[`MAX_SIDE`] pixels a side. What is drawn is bounded by
//! those caps, so the PNG and the SVG are too; the host checks each block
//! against the operator's caps as it is attached.

mod render;
pub mod spec;
mod typeset;

use airlock_guest::content::{self, Content};
use airlock_guest::{ToolError, export_tool, log, progress};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most series in one chart.
pub const MAX_SERIES: usize = 10;
/// Most points (values or x/y pairs) in one series.
pub const MAX_POINTS_PER_SERIES: usize = 5_000;
/// Most points in one chart, all series together.
pub const MAX_TOTAL_POINTS: usize = 10_000;
/// Longest title, axis label, series name or category label, in characters.
pub const MAX_TEXT_CHARS: usize = 200;
/// Smallest width or height, in pixels.
pub const MIN_SIDE: u32 = 100;
/// Largest width or height, in pixels.
pub const MAX_SIDE: u32 = 2_000;
/// Width when none is given, in pixels.
pub const DEFAULT_WIDTH: u32 = 800;
/// Height when none is given, in pixels.
pub const DEFAULT_HEIGHT: u32 = 500;
/// Largest magnitude of a value: beyond it the distance between two values
/// may not be a finite number, and no axis can be drawn.
pub const MAX_MAGNITUDE: f64 = 1e300;

/// The URI of the SVG resource: a name for it, nothing is fetched.
pub const SVG_URI: &str = "airlock:chart/chart.svg";

/// The kind of chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Lines through each series' points.
    Line,
    /// Bars side by side per category, one colour per series.
    Bar,
    /// A dot per x/y pair.
    Scatter,
}

impl Kind {
    /// The name the arguments use.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Line => "line",
            Kind::Bar => "bar",
            Kind::Scatter => "scatter",
        }
    }
}

/// One point of a scatter chart (or of a line chart on a numeric x axis).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// The x value.
    pub x: f64,
    /// The y value.
    pub y: f64,
}

/// One named series.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Series {
    /// The series' name, shown in the legend (at most 200 characters).
    #[schemars(length(max = 200))]
    pub name: String,
    /// The y values, one per category or x position 0, 1, 2, … (line and
    /// bar charts; at most 5000).
    #[serde(default)]
    #[schemars(length(min = 1, max = 5000))]
    pub values: Option<Vec<f64>>,
    /// x/y pairs (scatter charts, or a line chart on a numeric x axis,
    /// drawn in the order given; at most 5000).
    #[serde(default)]
    #[schemars(length(min = 1, max = 5000))]
    pub points: Option<Vec<Point>>,
}

/// Arguments of `chart`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// `line`, `bar` or `scatter`.
    pub kind: Kind,
    /// The series to draw, 1 to 10, with at most 10000 points in all. Line
    /// and bar series give `values`; scatter series give `points`; a line
    /// series may give `points` instead for a numeric x axis.
    #[schemars(length(min = 1, max = 10))]
    pub series: Vec<Series>,
    /// Category labels of the x axis, one per value (line and bar charts
    /// whose series give `values`; every such series then has as many
    /// values as there are labels).
    #[serde(default)]
    #[schemars(length(min = 1, max = 5000))]
    pub labels: Option<Vec<String>>,
    /// The chart's title (at most 200 characters).
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub title: Option<String>,
    /// The x axis' label (at most 200 characters).
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub x_label: Option<String>,
    /// The y axis' label (at most 200 characters).
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub y_label: Option<String>,
    /// Width of the picture in pixels, 100 to 2000; 800 when omitted.
    // The schema's minimum is 1, not 100: a provider's strict mode drops
    // `minimum` (Anthropic's does) and may then send any positive size,
    // which the schema should not refuse; the tool refuses sizes under 100
    // by name, as the description says.
    #[serde(default)]
    #[schemars(range(min = 1, max = 2000))]
    pub width: Option<u32>,
    /// Height of the picture in pixels, 100 to 2000; 500 when omitted.
    #[serde(default)]
    #[schemars(range(min = 1, max = 2000))]
    pub height: Option<u32>,
    /// Also return the chart as SVG markup (an `image/svg+xml` resource,
    /// several KB of text), for a vector file to save or edit; only the
    /// PNG when omitted or false.
    #[serde(default)]
    pub svg: Option<bool>,
}

/// The smallest and largest of some values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Range {
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

/// What was drawn. The chart itself is attached as a PNG image (and an SVG
/// resource, when asked for).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Summary {
    /// `line`, `bar` or `scatter`.
    pub kind: Kind,
    /// How many series were drawn.
    pub series: usize,
    /// How many points were drawn, all series together.
    pub points: usize,
    /// Width of the picture in pixels.
    pub width: u32,
    /// Height of the picture in pixels.
    pub height: u32,
    /// The range of the y values.
    pub y: Range,
    /// The range of the x values, for series given as x/y pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x: Option<Range>,
    /// Size of the attached PNG in bytes.
    pub png_bytes: usize,
    /// Size of the attached SVG in bytes, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub svg_bytes: Option<usize>,
}

/// Draw the chart, attach it as a PNG image (and an SVG resource, when
/// asked for), and summarize it.
pub fn chart(args: Args) -> Result<Summary, ToolError> {
    let with_svg = args.svg == Some(true);
    let spec = spec::Spec::from_args(args)?;
    let steps = if with_svg { 3.0 } else { 2.0 };
    progress::report(1.0, Some(steps), Some("drawing the PNG"));
    let png = render::png(&spec)?;
    let svg = if with_svg {
        progress::report(2.0, Some(steps), Some("drawing the SVG"));
        Some(render::svg(&spec)?)
    } else {
        None
    };
    let summary = Summary {
        kind: spec.kind,
        series: spec.series.len(),
        points: spec.points(),
        width: spec.width,
        height: spec.height,
        y: spec.y_range,
        x: spec.x_range,
        png_bytes: png.len(),
        svg_bytes: svg.as_ref().map(String::len),
    };
    let svg_note = summary.svg_bytes.map(|bytes| format!(", SVG {bytes} bytes")).unwrap_or_default();
    log::debug(&format!(
        "{} chart of {} points in {} series: PNG {} bytes{svg_note}",
        spec.kind.as_str(),
        summary.points,
        summary.series,
        summary.png_bytes,
    ));
    content::attach(Content::image("image/png", png))?;
    if let Some(svg) = svg {
        content::attach(Content::embedded_text(SVG_URI, "image/svg+xml", svg))?;
    }
    progress::report(steps, Some(steps), None);
    Ok(summary)
}

export_tool!(
    name: "chart",
    description: "Draws a line, bar or scatter chart from numbers and returns it as a PNG image, with a short \
                  summary (kind, series, points, size, value range). Give one or more named series: `values` (one \
                  y value per category) for line and bar charts, `points` (x/y pairs) for scatter charts; \
                  optional category `labels`, a `title`, axis labels and a size in pixels. Set `svg` to true only \
                  when the user wants an SVG file too.",
    handler: chart,
);

#[cfg(test)]
mod tests;
