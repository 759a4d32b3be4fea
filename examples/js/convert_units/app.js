// `convert_units_js`: converts a quantity between units of length, mass and
// temperature. An example of a tool written with the JavaScript SDK
// (`sdk/js/airlock-tool.js`); the Rust and Python examples beside it are the
// same tool. Besides its JSON result it attaches a text block showing the
// conversion, and writes a debugging line to the operator's log.

import { Content, content, defineTool, log, t, ToolError } from "./airlock-tool.js";

// unit -> [dimension, scale, offset]: a value v is v * scale + offset in the
// dimension's base unit (metre, kilogram, kelvin).
const UNITS = {
  m: ["length", 1, 0],
  km: ["length", 1000, 0],
  cm: ["length", 0.01, 0],
  mm: ["length", 0.001, 0],
  mi: ["length", 1609.344, 0],
  yd: ["length", 0.9144, 0],
  ft: ["length", 0.3048, 0],
  in: ["length", 0.0254, 0],
  kg: ["mass", 1, 0],
  g: ["mass", 0.001, 0],
  lb: ["mass", 0.45359237, 0],
  oz: ["mass", 0.028349523125, 0],
  K: ["temperature", 1, 0],
  C: ["temperature", 1, 273.15],
  F: ["temperature", 5 / 9, 273.15 - (32 * 5) / 9],
};

function lookup(unit) {
  const found = Object.hasOwn(UNITS, unit) ? UNITS[unit] : undefined;
  if (!found) {
    throw new ToolError(`unknown unit '${unit}'; known units: ${Object.keys(UNITS).join(", ")}`, "unknown_unit");
  }
  return found;
}

export const { metadata, handler } = defineTool({
  name: "convert_units_js",
  description:
    "Converts a quantity between units of the same dimension: length (m, km, cm, mm, mi, yd, ft, in), " +
    "mass (kg, g, lb, oz) or temperature (K, C, F).",
  parameters: t.object({
    value: t.number({ description: "The quantity to convert." }),
    from_unit: t.string({ description: "The unit of `value`, e.g. `km`." }),
    to_unit: t.string({ description: "The unit to convert to, e.g. `mi`." }),
    precision: t.optional(t.integer({ minimum: 0, maximum: 12, default: 6, description: "Decimal places of the result." })),
  }),
  output: t.object(
    { value: t.number(), unit: t.string(), dimension: t.string() },
    { description: "The converted quantity." },
  ),
  handler({ value, from_unit, to_unit, precision = 6 }) {
    const source = lookup(from_unit);
    const target = lookup(to_unit);
    if (source[0] !== target[0]) {
      throw new ToolError(
        `cannot convert ${from_unit} (${source[0]}) to ${to_unit} (${target[0]}): pick two units of one dimension`,
        "incompatible_units",
      );
    }
    const base = value * source[1] + source[2];
    const converted = Number(((base - target[2]) / target[1]).toFixed(precision));
    // The working, for a person reading the result in a client that shows
    // content blocks; the model reads the JSON result.
    content.attach(Content.text(`${value} ${from_unit} = ${converted} ${to_unit}`));
    log.debug(`converted ${from_unit} to ${to_unit} (${source[0]})`);
    return { value: converted, unit: to_unit, dimension: source[0] };
  },
});
