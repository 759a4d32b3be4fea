//! `convert_units_rust`: converts a quantity between units of length, mass
//! and temperature. An example of a tool written with the Rust SDK
//! (`guest-sdk/`); the Python and JavaScript examples beside it are the same
//! tool. Besides its JSON result it attaches a text block showing the
//! conversion, and writes a debugging line to the operator's log.

use airlock_guest::content::{self, Content};
use airlock_guest::{ToolError, export_tool, log};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `convert_units_rust`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The quantity to convert.
    pub value: f64,
    /// The unit of `value`, e.g. `km`.
    pub from_unit: String,
    /// The unit to convert to, e.g. `mi`.
    pub to_unit: String,
    /// Decimal places of the result.
    #[serde(default = "default_precision")]
    #[schemars(range(max = 12))]
    pub precision: u8,
}

fn default_precision() -> u8 {
    6
}

/// The converted quantity.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Conversion {
    /// The converted value.
    pub value: f64,
    /// Its unit (`to_unit`).
    pub unit: String,
    /// What both units measure: `length`, `mass` or `temperature`.
    pub dimension: String,
}

/// A unit: its dimension, and `value * scale + offset` in the dimension's
/// base unit (metre, kilogram, kelvin).
struct Unit {
    name: &'static str,
    dimension: &'static str,
    scale: f64,
    offset: f64,
}

const fn unit(name: &'static str, dimension: &'static str, scale: f64, offset: f64) -> Unit {
    Unit { name, dimension, scale, offset }
}

const UNITS: &[Unit] = &[
    unit("m", "length", 1.0, 0.0),
    unit("km", "length", 1000.0, 0.0),
    unit("cm", "length", 0.01, 0.0),
    unit("mm", "length", 0.001, 0.0),
    unit("mi", "length", 1609.344, 0.0),
    unit("yd", "length", 0.9144, 0.0),
    unit("ft", "length", 0.3048, 0.0),
    unit("in", "length", 0.0254, 0.0),
    unit("kg", "mass", 1.0, 0.0),
    unit("g", "mass", 0.001, 0.0),
    unit("lb", "mass", 0.453_592_37, 0.0),
    unit("oz", "mass", 0.028_349_523_125, 0.0),
    unit("K", "temperature", 1.0, 0.0),
    unit("C", "temperature", 1.0, 273.15),
    unit("F", "temperature", 5.0 / 9.0, 273.15 - 32.0 * 5.0 / 9.0),
];

fn lookup(name: &str) -> Result<&'static Unit, ToolError> {
    UNITS.iter().find(|u| u.name == name).ok_or_else(|| {
        let known: Vec<&str> = UNITS.iter().map(|u| u.name).collect();
        ToolError::with_code("unknown_unit", format!("unknown unit '{name}'; known units: {}", known.join(", ")))
    })
}

/// Convert `value` from one unit to another of the same dimension.
pub fn convert(args: Args) -> Result<Conversion, ToolError> {
    let (source, target) = (lookup(&args.from_unit)?, lookup(&args.to_unit)?);
    if source.dimension != target.dimension {
        return Err(ToolError::with_code(
            "incompatible_units",
            format!(
                "cannot convert {} ({}) to {} ({}): pick two units of one dimension",
                source.name, source.dimension, target.name, target.dimension
            ),
        ));
    }
    let base = args.value * source.scale + source.offset;
    let factor = 10f64.powi(i32::from(args.precision.min(12)));
    let value = ((base - target.offset) / target.scale * factor).round() / factor;
    // The working, for a person reading the result in a client that shows
    // content blocks; the model reads the JSON result.
    content::attach(Content::text(format!("{} {} = {value} {}", args.value, source.name, target.name)))?;
    log::debug(&format!("converted {} to {} ({})", source.name, target.name, source.dimension));
    Ok(Conversion { value, unit: target.name.to_owned(), dimension: source.dimension.to_owned() })
}

export_tool!(
    name: "convert_units_rust",
    description: "Converts a quantity between units of the same dimension: length (m, km, cm, mm, mi, yd, ft, \
                  in), mass (kg, g, lb, oz) or temperature (K, C, F).",
    handler: convert,
);

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: f64, from: &str, to: &str) -> Args {
        Args { value, from_unit: from.into(), to_unit: to.into(), precision: 6 }
    }

    #[test]
    fn converts_within_a_dimension() {
        assert_eq!(convert(args(5.0, "km", "mi")).unwrap().value, 3.106856);
        assert_eq!(convert(args(100.0, "C", "F")).unwrap().value, 212.0);
    }

    #[test]
    fn attaches_the_working_and_logs_a_line() {
        content::take_attached();
        log::take_lines();
        convert(args(5.0, "km", "mi")).unwrap();
        assert_eq!(content::take_attached(), [Content::text("5 km = 3.106856 mi")]);
        assert_eq!(log::take_lines(), [(log::Level::Debug, "converted km to mi (length)".to_owned())]);
    }

    #[test]
    fn refuses_units_of_different_dimensions_and_unknown_units() {
        assert_eq!(convert(args(1.0, "kg", "m")).unwrap_err().code.as_deref(), Some("incompatible_units"));
        assert_eq!(convert(args(1.0, "parsec", "m")).unwrap_err().code.as_deref(), Some("unknown_unit"));
    }
}
