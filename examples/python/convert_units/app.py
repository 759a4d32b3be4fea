"""`convert_units_python`: converts a quantity between units of length, mass
and temperature. An example of a tool written with the Python SDK
(`sdk/python/airlock_tool`); the Rust and JavaScript examples beside it
are the same tool.
"""

from dataclasses import dataclass
from typing import Annotated

from airlock_tool import Param, ToolError, export, tool

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
    return Conversion(round((base - target[2]) / target[1], precision), to_unit, source[0])


Metadata, Handler = export(convert)
