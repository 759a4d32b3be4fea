//! A checked [`Spec`] drawn with plotters, once on a bitmap (encoded as
//! PNG) and once as SVG; the same drawing code for both.

use crate::spec::Spec;
use crate::typeset::Typeset;
use crate::{Kind, Range};
use airlock_guest::ToolError;
use plotters::backend::{BitMapBackend, DrawingBackend, SVGBackend};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The series' colours, in order (the Tableau 10 palette: distinct, and
/// readable on white).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// The family plotters is asked for: the SVG names it, the bitmap's text
/// comes from the embedded font whatever it is.
const FAMILY: &str = "sans-serif";

/// The code of a failure to draw, which the checks should have made
/// impossible.
const DRAWING_FAILED: &str = "drawing_failed";

fn failed(what: &str, err: impl std::fmt::Display) -> ToolError {
    ToolError::with_code(DRAWING_FAILED, format!("the chart could not be drawn ({what}): {err}"))
}

/// The chart as a PNG (8-bit RGB).
pub fn png(spec: &Spec) -> Result<Vec<u8>, ToolError> {
    let (width, height) = (spec.width, spec.height);
    // At most 2000 × 2000 × 3 bytes (12 MB), by the caps on the sides.
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    {
        let backend = Typeset::bitmap(BitMapBackend::with_buffer(&mut pixels, (width, height)));
        draw(spec, &backend.into_drawing_area())?;
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // Charts are flat colours: the fast deflate level already shrinks them
    // well, and costs a fraction of the default's fuel.
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(|err| failed("PNG header", err))?;
    writer.write_image_data(&pixels).map_err(|err| failed("PNG data", err))?;
    writer.finish().map_err(|err| failed("PNG end", err))?;
    Ok(out)
}

/// The chart as an SVG document.
pub fn svg(spec: &Spec) -> Result<String, ToolError> {
    let mut out = String::new();
    {
        let backend = Typeset::vector(SVGBackend::with_string(&mut out, (spec.width, spec.height)));
        draw(spec, &backend.into_drawing_area())?;
    }
    Ok(out)
}

/// Sizes of the chart's texts, from the picture's smaller side.
struct Sizes {
    title: f64,
    label: f64,
    desc: f64,
}

impl Sizes {
    fn for_spec(spec: &Spec) -> Self {
        let side = f64::from(spec.width.min(spec.height));
        Self {
            title: (side / 18.0).clamp(11.0, 40.0),
            label: (side / 32.0).clamp(9.0, 22.0),
            desc: (side / 28.0).clamp(10.0, 26.0),
        }
    }
}

/// The axes' ranges with a margin, so that no point sits on the frame;
/// a bar chart's y axis starts at zero.
fn axes(spec: &Spec, sizes: &Sizes) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
    let pad = |range: Range, share: f64| {
        let span = range.max - range.min;
        let pad = if span > 0.0 { span * share } else { range.max.abs().max(1.0) * 0.5 };
        (range.min - pad)..(range.max + pad)
    };
    let x = match spec.x_range {
        Some(range) => pad(range, 0.03),
        None if spec.kind == Kind::Bar => -0.5..(spec.categories as f64 - 0.5),
        None if spec.categories <= 1 => -0.5..0.5,
        None => {
            let last = spec.categories as f64 - 1.0;
            let pad = (last * 0.02).max(0.25);
            -pad..last + pad
        }
    };
    let y = if spec.kind == Kind::Bar {
        let range = Range { min: spec.y_range.min.min(0.0), max: spec.y_range.max.max(0.0) };
        let mut y = pad(range, 0.05);
        // Bars grow from zero: no margin below it unless a bar goes there.
        if range.min >= 0.0 {
            y.start = 0.0;
        }
        if range.max <= 0.0 {
            y.end = 0.0;
        }
        y
    } else {
        pad(spec.y_range, 0.05)
    };
    // Room at the top for the legend, which sits in the upper right
    // corner: the share of the plot's height the legend takes (a line per
    // series and its margins) is added above the highest value, so that
    // no point is hidden under it.
    let y = if legend(spec) {
        let legend = (spec.series.len() as f64 * 1.6 + 2.5) * sizes.label;
        let title = if spec.title.is_some() { sizes.title * 1.6 } else { 0.0 };
        let plot = f64::from(spec.height) - sizes.label * 3.4 - title - sizes.desc * 1.4;
        let share = if plot > 0.0 { (legend / plot).min(0.6) } else { 0.6 };
        y.start..y.end + (y.end - y.start) * share / (1.0 - share)
    } else {
        y
    };
    (x, y)
}

/// Whether the chart has a legend: several series, or one with a name.
fn legend(spec: &Spec) -> bool {
    spec.series.len() > 1 || spec.series.iter().any(|s| !s.name.is_empty())
}

/// A tick label: short, without the float noise of a computed step
/// (`0.30000000000000004`).
fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-3..1e7).contains(&magnitude) {
        return format!("{value:.2e}");
    }
    let text = format!("{value:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0".to_owned() } else { text.to_owned() }
}

/// The label of a category axis at `x`: the category's label (or its
/// index) at whole numbers, nothing between them.
fn category(spec: &Spec, x: f64) -> String {
    let index = x.round();
    if (x - index).abs() > 1e-6 || index < 0.0 || index >= spec.categories as f64 {
        return String::new();
    }
    let index = index as usize;
    match &spec.labels {
        Some(labels) => labels.get(index).cloned().unwrap_or_default(),
        None => index.to_string(),
    }
}

fn draw<DB: DrawingBackend>(spec: &Spec, root: &DrawingArea<DB, Shift>) -> Result<(), ToolError> {
    let error = |what: &'static str| move |err: DrawingAreaErrorKind<DB::ErrorType>| failed(what, err);
    root.fill(&WHITE).map_err(error("background"))?;
    let sizes = Sizes::for_spec(spec);
    let (x_range, y_range) = axes(spec, &sizes);

    let mut builder = ChartBuilder::on(root);
    builder
        .margin((sizes.label * 0.8) as u32)
        .x_label_area_size((sizes.label * 1.8 + if spec.x_label.is_some() { sizes.desc * 1.4 } else { 0.0 }) as u32)
        .y_label_area_size((sizes.label * 4.2 + if spec.y_label.is_some() { sizes.desc * 1.4 } else { 0.0 }) as u32);
    if let Some(title) = &spec.title {
        builder.caption(title, (FAMILY, sizes.title).into_font().color(&BLACK));
    }
    let mut chart = builder.build_cartesian_2d(x_range, y_range).map_err(error("axes"))?;

    let category_label = |x: &f64| category(spec, *x);
    let number_label = |v: &f64| number(*v);
    let plot_width = spec.width.saturating_sub((sizes.label * 6.0) as u32);
    let x_labels = if spec.numeric_x {
        // About one label per 90 pixels.
        (plot_width / 90).clamp(2, 12) as usize
    } else {
        // One per category while they fit, about 60 pixels apart.
        spec.categories.min((plot_width / 60).max(2) as usize)
    };
    let label_style = (FAMILY, sizes.label).into_font().color(&BLACK);
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(x_labels)
        .y_labels((spec.height / 60).clamp(2, 12) as usize)
        .label_style(label_style)
        .axis_desc_style((FAMILY, sizes.desc).into_font().color(&BLACK))
        .max_light_lines(1)
        .light_line_style(RGBColor(0xf2, 0xf2, 0xf2))
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .y_label_formatter(&number_label);
    if spec.numeric_x {
        mesh.x_label_formatter(&number_label);
    } else {
        mesh.x_label_formatter(&category_label).disable_x_mesh();
    }
    if let Some(label) = &spec.x_label {
        mesh.x_desc(label.as_str());
    }
    if let Some(label) = &spec.y_label {
        mesh.y_desc(label.as_str());
    }
    mesh.draw().map_err(error("axes"))?;

    let count = spec.series.len();
    let stroke = (f64::from(spec.width.min(spec.height)) / 180.0).clamp(1.0, 5.0) as u32;
    for (i, series) in spec.series.iter().enumerate() {
        let color = PALETTE.get(i % PALETTE.len()).copied().unwrap_or(BLACK);
        let annotation = match spec.kind {
            Kind::Line => chart
                .draw_series(LineSeries::new(series.points.iter().copied(), color.stroke_width(stroke)))
                .map_err(error("lines"))?,
            Kind::Scatter => {
                let radius = (f64::from(spec.width.min(spec.height)) / 160.0).clamp(2.0, 5.0) as i32;
                chart
                    .draw_series(series.points.iter().map(|&p| Circle::new(p, radius, color.mix(0.8).filled())))
                    .map_err(error("points"))?
            }
            Kind::Bar => {
                // Each category's slot is 0.8 wide, shared by the series.
                let slot = 0.8 / count as f64;
                let offset = -0.4 + slot * i as f64;
                chart
                    .draw_series(series.points.iter().map(|&(x, y)| {
                        let left = x + offset + slot * 0.05;
                        let right = x + offset + slot * 0.95;
                        Rectangle::new([(left, 0.0), (right, y)], color.filled())
                    }))
                    .map_err(error("bars"))?
            }
        };
        if legend(spec) {
            let size = sizes.label as i32;
            annotation
                .label(series.name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - size / 3), (x + size, y + size / 3)], color.filled()));
        }
    }
    if legend(spec) {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FAMILY, sizes.label).into_font().color(&BLACK))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(0xbb, 0xbb, 0xbb))
            .draw()
            .map_err(error("legend"))?;
    }
    root.present().map_err(error("output"))?;
    Ok(())
}
