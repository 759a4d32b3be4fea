"""How far the current call has come (`airlock:tool/progress`), for a
client that asked to be told. The host forwards reports as MCP progress
notifications, at most as often as the operator allows (the last report is
kept); a report whose `progress` does not grow is dropped.

    from airlock_tool import progress

    for done, page in enumerate(pages, start=1):
        ...  # work on the page
        progress.report(done, total=len(pages), message=f"page {page}")

Outside a component (a tool's unit tests with the host's CPython) nothing
reaches a host: reports are kept, and `take_reports()` returns them.
"""

__all__ = ["report", "take_reports"]

# What a native build reported, for its tests to read: (progress, total, message).
_REPORTS: list[tuple[float, float | None, str | None]] = []


def report(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Report `progress` (growing from one report to the next) out of
    `total` when known, with a one-line `message` for a person."""
    if isinstance(progress, bool) or not isinstance(progress, (int, float)):
        raise TypeError(f"progress must be a number, not {type(progress).__name__}")
    if total is not None and (isinstance(total, bool) or not isinstance(total, (int, float))):
        raise TypeError(f"total must be a number or None, not {type(total).__name__}")
    if message is not None and not isinstance(message, str):
        raise TypeError(f"message must be a str or None, not {type(message).__name__}")
    progress = float(progress)
    total = None if total is None else float(total)
    try:
        from wit_world.imports import progress as wit  # type: ignore[import-not-found]
    except ImportError:
        _REPORTS.append((progress, total, message))
        return
    wit.report(progress, total, message)


def take_reports() -> list[tuple[float, float | None, str | None]]:
    """The reports made since the last call of this function, in order, as
    (progress, total, message). Only outside a component (a tool's unit
    tests); a component's reports go to the host."""
    taken = list(_REPORTS)
    _REPORTS.clear()
    return taken
