"""`convert_units_python`: converts a quantity between units of length, mass
and temperature. An example of a tool written with the Python SDK
(`sdk/python/airlock_tool`); the Rust and JavaScript examples beside it
are the same tool. Besides its JSON result it attaches a text block showing
the conversion, and writes a debugging line to the operator's log.
"""

from dataclasses import dataclass
from typing import Annotated

from airlock_tool import Param, ToolError, content, export, log, tool
from airlock_tool.content import Content

# unit -> (dimension, scale, offset): a value v is v * scale + offset in the
# dimension's base unit (metre, kilogram, kelvin).
UNITS = {
    "m": ("length", 1.0, 0.0),
    "km": ("length", 1000.0, 0.0),
    "cm": ("length", 0.01, 0.0),
    "mm": ("length", 0.001, 0.0),
    "mi": ("length", 1609.344, 0.0),
    "yd": ("length", 0.9144, 0.0),
    "ft": ("length", 0.3048, 0.0),
    "in": ("length", 0.0254, 0.0),
    "kg": ("mass", 1.0, 0.0),
    "g": ("mass", 0.001, 0.0),
    "lb": ("mass", 0.45359237, 0.0),
    "oz": ("mass", 0.028349523125, 0.0),
    "K": ("temperature", 1.0, 0.0),
    "C": ("temperature", 1.0, 273.15),
    "F": ("temperature", 5.0 / 9.0, 273.15 - 32.0 * 5.0 / 9.0),
}


@dataclass
class Conversion:
    """The converted quantity."""

    value: float
    unit: str
    dimension: str


def lookup(unit: str) -> tuple[str, float, float]:
    try:
        return UNITS[unit]
    except KeyError:
        raise ToolError(f"unknown unit {unit!r}; known units: {', '.join(UNITS)}", code="unknown_unit") from None


@tool(name="convert_units_python")
def convert(
    value: float,
    from_unit: str,
    to_unit: str,
    precision: Annotated[int, Param(minimum=0, maximum=12)] = 6,
) -> Conversion:
    """Converts a quantity between units of the same dimension: length (m, km, cm, mm, mi, yd, ft,
    in), mass (kg, g, lb, oz) or temperature (K, C, F).

    Args:
        value: The quantity to convert.
        from_unit: The unit of `value`, e.g. `km`.
        to_unit: The unit to convert to, e.g. `mi`.
        precision: Decimal places of the result.
    """
    source, target = lookup(from_unit), lookup(to_unit)
    if source[0] != target[0]:
        raise ToolError(
            f"cannot convert {from_unit} ({source[0]}) to {to_unit} ({target[0]}): pick two units of one dimension",
            code="incompatible_units",
        )
    base = value * source[1] + source[2]
    converted = round((base - target[2]) / target[1], precision)
    # The working, for a person reading the result in a client that shows
    # content blocks; the model reads the JSON result.
    content.attach(Content.text(f"{value:.15g} {from_unit} = {converted:.15g} {to_unit}"))
    log.debug(f"converted {from_unit} to {to_unit} ({source[0]})")
    return Conversion(converted, to_unit, source[0])


Metadata, Handler = export(convert)
