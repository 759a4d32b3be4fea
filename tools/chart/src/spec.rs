//! The chart as the drawing code sees it: the model's arguments checked
//! once ([`Spec::from_args`]) into numbers that can be drawn and texts
//! that fit, or a [`ToolError`] naming the member that was wrong and what
//! is accepted.

use crate::{
    Args, DEFAULT_HEIGHT, DEFAULT_WIDTH, Kind, MAX_MAGNITUDE, MAX_POINTS_PER_SERIES, MAX_SERIES, MAX_SIDE,
    MAX_TEXT_CHARS, MAX_TOTAL_POINTS, MIN_SIDE, Range, Series,
};
use airlock_guest::ToolError;

/// The code of every refusal of the arguments.
pub const INVALID: &str = "invalid_chart";

/// One series, ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Its name, for the legend.
    pub name: String,
    /// Its points; for series given as `values`, x is the category's index.
    pub points: Vec<(f64, f64)>,
}

/// A chart that can be drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Line, bar or scatter.
    pub kind: Kind,
    /// The series, in the order given.
    pub series: Vec<Line>,
    /// Whether the x axis is numeric (series given as `points`) rather than
    /// categories 0, 1, 2, … (series given as `values`).
    pub numeric_x: bool,
    /// How many categories there are (series given as `values`).
    pub categories: usize,
    /// The categories' labels, when given.
    pub labels: Option<Vec<String>>,
    /// The title, when given.
    pub title: Option<String>,
    /// The x axis' label, when given.
    pub x_label: Option<String>,
    /// The y axis' label, when given.
    pub y_label: Option<String>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The range of the y values.
    pub y_range: Range,
    /// The range of the x values, for series given as `points`.
    pub x_range: Option<Range>,
}

fn refuse(message: String) -> ToolError {
    ToolError::with_code(INVALID, message)
}

impl Spec {
    /// Check the arguments.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] with code [`INVALID`] naming the first member that
    /// is wrong (e.g. `series[1].values[3]`) and what would be accepted.
    pub fn from_args(args: Args) -> Result<Self, ToolError> {
        // Whether to draw an SVG too is the caller's (`chart`), not the picture's.
        let Args { kind, series, labels, title, x_label, y_label, width, height, svg: _ } = args;
        if series.is_empty() {
            return Err(refuse("`series` is empty: give at least one series".into()));
        }
        if series.len() > MAX_SERIES {
            return Err(refuse(format!("`series` has {} series; at most {MAX_SERIES} are drawn", series.len())));
        }
        let width = side("width", width, DEFAULT_WIDTH)?;
        let height = side("height", height, DEFAULT_HEIGHT)?;
        let title = text("title", title)?;
        let x_label = text("x_label", x_label)?;
        let y_label = text("y_label", y_label)?;

        let mut lines = Vec::with_capacity(series.len());
        let mut numeric_x = None;
        let mut total = 0usize;
        for (i, one) in series.into_iter().enumerate() {
            let (line, numeric) = checked_series(kind, i, one)?;
            match numeric_x {
                None => numeric_x = Some((numeric, i)),
                Some((first, at)) if first != numeric => {
                    let form = |numeric: bool| if numeric { "points" } else { "values" };
                    return Err(refuse(format!(
                        "series[{at}] gives `{}` and series[{i}] gives `{}`: every series of a line chart gives \
                         the one or the other",
                        form(first),
                        form(numeric)
                    )));
                }
                Some(_) => {}
            }
            total = total.saturating_add(line.points.len());
            if total > MAX_TOTAL_POINTS {
                return Err(refuse(format!(
                    "the series have more than {MAX_TOTAL_POINTS} points in all: draw fewer points (sample or \
                     aggregate them)"
                )));
            }
            lines.push(line);
        }
        let numeric_x = numeric_x.is_some_and(|(numeric, _)| numeric);

        let categories = if numeric_x { 0 } else { same_lengths(&lines)? };
        let labels = match labels {
            None => None,
            Some(_) if numeric_x => {
                return Err(refuse(
                    "`labels` names categories, but the series give `points` (a numeric x axis): leave `labels` \
                     out, or give the series as `values`"
                        .into(),
                ));
            }
            Some(labels) => Some(checked_labels(labels, categories)?),
        };

        let y_range = range(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
        let x_range = numeric_x.then(|| range(lines.iter().flat_map(|l| l.points.iter().map(|p| p.0))));
        Ok(Self {
            kind,
            series: lines,
            numeric_x,
            categories,
            labels,
            title,
            x_label,
            y_label,
            width,
            height,
            y_range,
            x_range,
        })
    }

    /// How many points are drawn, all series together.
    pub fn points(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
    }
}

/// A width or height within [`MIN_SIDE`]..=[`MAX_SIDE`].
fn side(member: &str, value: Option<u32>, default: u32) -> Result<u32, ToolError> {
    let value = value.unwrap_or(default);
    if (MIN_SIDE..=MAX_SIDE).contains(&value) {
        Ok(value)
    } else {
        Err(refuse(format!("`{member}` is {value} pixels; give {MIN_SIDE} to {MAX_SIDE}")))
    }
}

/// A text of at most [`MAX_TEXT_CHARS`] characters, control characters
/// (line breaks among them) drawn as spaces; an empty one is left out.
fn text(member: &str, value: Option<String>) -> Result<Option<String>, ToolError> {
    let Some(value) = value else { return Ok(None) };
    let count = value.chars().count();
    if count > MAX_TEXT_CHARS {
        return Err(refuse(format!("`{member}` is {count} characters long; at most {MAX_TEXT_CHARS} are drawn")));
    }
    let value: String = value.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    Ok((!value.trim().is_empty()).then_some(value))
}

/// One series checked for `kind`, and whether it gives `points`.
fn checked_series(kind: Kind, i: usize, series: Series) -> Result<(Line, bool), ToolError> {
    let Series { name, values, points } = series;
    let name = text(&format!("series[{i}].name"), Some(name))?.unwrap_or_default();
    let (points, numeric) = match (values, points) {
        (Some(_), Some(_)) => {
            return Err(refuse(format!(
                "series[{i}] gives both `values` and `points`: give `values` (one y per category) for a line or \
                 bar chart, `points` (x/y pairs) for a scatter chart"
            )));
        }
        (None, None) => {
            return Err(refuse(format!(
                "series[{i}] gives neither `values` nor `points`: give `values` (one y per category) for a line \
                 or bar chart, `points` (x/y pairs) for a scatter chart"
            )));
        }
        (Some(_), None) if kind == Kind::Scatter => {
            return Err(refuse(format!(
                "series[{i}] gives `values`, but a scatter chart draws x/y pairs: give `points`, e.g. \
                 [{{\"x\": 1, \"y\": 2}}]"
            )));
        }
        (None, Some(_)) if kind == Kind::Bar => {
            return Err(refuse(format!(
                "series[{i}] gives `points`, but a bar chart draws one bar per category: give `values` (and the \
                 categories' `labels`)"
            )));
        }
        (Some(values), None) => {
            count(&format!("series[{i}].values"), values.len())?;
            let mut points = Vec::with_capacity(values.len());
            for (j, value) in values.into_iter().enumerate() {
                let y = number(&format!("series[{i}].values[{j}]"), value)?;
                points.push((j as f64, y));
            }
            (points, false)
        }
        (None, Some(given)) => {
            count(&format!("series[{i}].points"), given.len())?;
            let mut points = Vec::with_capacity(given.len());
            for (j, point) in given.into_iter().enumerate() {
                let x = number(&format!("series[{i}].points[{j}].x"), point.x)?;
                let y = number(&format!("series[{i}].points[{j}].y"), point.y)?;
                points.push((x, y));
            }
            (points, true)
        }
    };
    Ok((Line { name, points }, numeric))
}

/// A series' length within 1..=[`MAX_POINTS_PER_SERIES`].
fn count(member: &str, len: usize) -> Result<(), ToolError> {
    if len == 0 {
        Err(refuse(format!("`{member}` is empty: give at least one number")))
    } else if len > MAX_POINTS_PER_SERIES {
        Err(refuse(format!("`{member}` has {len} entries; a series has at most {MAX_POINTS_PER_SERIES}")))
    } else {
        Ok(())
    }
}

/// A finite number no larger than [`MAX_MAGNITUDE`].
fn number(member: &str, value: f64) -> Result<f64, ToolError> {
    if value.is_nan() {
        Err(refuse(format!("`{member}` is not a number (NaN): give a finite number")))
    } else if value.is_infinite() {
        Err(refuse(format!("`{member}` is infinite: give a finite number")))
    } else if value.abs() > MAX_MAGNITUDE {
        Err(refuse(format!("`{member}` is {value:e}; give numbers between -1e300 and 1e300")))
    } else {
        Ok(value)
    }
}

/// The one length every series given as `values` has.
fn same_lengths(lines: &[Line]) -> Result<usize, ToolError> {
    let mut first: Option<(usize, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        let len = line.points.len();
        match first {
            None => first = Some((i, len)),
            Some((at, expected)) if expected != len => {
                return Err(refuse(format!(
                    "series[{i}] has {len} values and series[{at}] has {expected}: every series of a line or bar \
                     chart has one value per category"
                )));
            }
            Some(_) => {}
        }
    }
    Ok(first.map_or(0, |(_, len)| len))
}

/// Category labels, one per category.
fn checked_labels(labels: Vec<String>, categories: usize) -> Result<Vec<String>, ToolError> {
    if labels.len() != categories {
        return Err(refuse(format!(
            "`labels` has {} labels and the series have {categories} values each: give one label per value",
            labels.len()
        )));
    }
    labels
        .into_iter()
        .enumerate()
        .map(|(i, label)| text(&format!("labels[{i}]"), Some(label)).map(Option::unwrap_or_default))
        .collect()
}

/// The smallest and largest of `values` (which are never empty here).
fn range(values: impl Iterator<Item = f64>) -> Range {
    let (min, max) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if min <= max { Range { min, max } } else { Range { min: 0.0, max: 0.0 } }
}
