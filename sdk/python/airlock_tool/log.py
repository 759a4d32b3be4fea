"""Lines for the operator's log (`airlock:tool/log`), tagged by the host
with the tool, the call id and the principal. They reach the client (and
so, perhaps, the model) only when the operator set `client_log = true` for
the tool; the host cuts long lines and counts, rather than keeps, a call's
lines past the operator's cap.

    from airlock_tool import log

    log.info("cache miss: fetching the exchange rates")

Outside a component (a tool's unit tests with the host's CPython) nothing
reaches a host: lines are kept, and `take_lines()` returns them.
"""

import enum

__all__ = ["Level", "debug", "error", "info", "take_lines", "warning", "write"]


class Level(enum.Enum):
    """How much a line matters."""

    # Detail for debugging the tool.
    DEBUG = "debug"
    # Something the operator may want to know.
    INFO = "info"
    # Something went wrong, and the tool carried on.
    WARNING = "warning"
    # Something failed.
    ERROR = "error"


# What a native build wrote, for its tests to read.
_LINES: list[tuple[Level, str]] = []


def write(level: Level, message: str) -> None:
    """Write one line at `level`."""
    if not isinstance(level, Level):
        raise TypeError(f"level must be a log.Level, not {type(level).__name__}")
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, not {type(message).__name__}")
    try:
        from wit_world.imports import log as wit  # type: ignore[import-not-found]
    except ImportError:
        _LINES.append((level, message))
        return
    wit.write(getattr(wit.Level, level.name), message)


def debug(message: str) -> None:
    """Write a debugging line."""
    write(Level.DEBUG, message)


def info(message: str) -> None:
    """Write a line the operator may want to read."""
    write(Level.INFO, message)


def warning(message: str) -> None:
    """Write a warning."""
    write(Level.WARNING, message)


def error(message: str) -> None:
    """Write an error."""
    write(Level.ERROR, message)


def take_lines() -> list[tuple[Level, str]]:
    """The lines written since the last call of this function, in order.
    Only outside a component (a tool's unit tests); a component's lines go
    to the host."""
    taken = list(_LINES)
    _LINES.clear()
    return taken
