"""`run_python`: the `airlock:tool` world around `runner.execute`.

componentize-py pre-initializes CPython with this module imported and
snapshots the result into the component. The submitted code runs in
`NAMESPACE`, created in that snapshot: when the host gives every call a fresh
instance (the default) nothing the code does persists, and when it keeps one
instance for a session, the variables of earlier calls are still there.

Only the standard-library modules imported while this module loads are in
the snapshot. The block below imports the ones offered to the submitted
code (an import of anything else fails with ModuleNotFoundError);
`OFFERED_MODULES` lists them for the description.
"""

import sys

# --- standard-library modules offered to the submitted code ----------------
# fmt: off
import abc, argparse, array, ast, base64, binascii, bisect, calendar, cmath, codecs  # noqa: E401,F401
import collections, collections.abc, colorsys, contextlib, copy, csv, dataclasses  # noqa: E401,F401
import datetime, decimal, difflib, enum, fnmatch, fractions, functools, graphlib  # noqa: E401,F401
import hashlib, heapq, hmac, html, inspect, io, itertools, json, keyword, math  # noqa: E401,F401
import numbers, operator, os, pprint, random, re, reprlib, secrets, shlex  # noqa: E401,F401
import socket, statistics, string, struct, textwrap, time, tomllib, traceback  # noqa: E401,F401
import types, typing, unicodedata, urllib.parse, uuid, weakref, zlib  # noqa: E401,F401
# fmt: on

OFFERED_MODULES = (
    "abc argparse array ast base64 binascii bisect calendar cmath codecs collections colorsys "
    "contextlib copy csv dataclasses datetime decimal difflib enum fnmatch fractions functools "
    "graphlib hashlib heapq hmac html inspect io itertools json keyword math numbers operator os "
    "pprint random re reprlib secrets shlex socket statistics string struct textwrap time tomllib "
    "traceback types typing unicodedata urllib.parse uuid weakref zlib"
)

import runner  # noqa: E402
from componentize_py_types import Err  # noqa: E402
from wit_world import exports  # noqa: E402
from wit_world.exports.handler import ToolError  # noqa: E402
from wit_world.imports import content  # noqa: E402

# The globals of the submitted code, kept for as long as this instance lives.
NAMESPACE = runner.new_namespace()

PYTHON_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"

# At most 1024 characters (some clients refuse longer descriptions): the
# detail is in the parameters' descriptions (`parameters_schema`).
DESCRIPTION = (
    f"Runs Python {PYTHON_VERSION} (CPython) in an isolated sandbox and returns what it printed and "
    "the value of its last expression. Only part of the standard library is available (`code` "
    "lists the modules; no pip packages such as numpy). No filesystem, "
    "network, subprocesses or threads. print() and sys.stdout go to `stdout`, "
    "sys.stderr to `stderr`. If the last statement is an expression, its "
    "value is returned as `result` in JSON form, or as `result_repr` (its repr()) when it has no JSON "
    "form. An uncaught exception is returned in `error` (name, message, traceback with line "
    "numbers in your code), with whatever was printed before it. show(data, mime_type) returns "
    "bytes the code made (a PNG, an SVG, a WAV) to the user as a picture, sound or file. Limits: "
    "memory and a time budget set by the operator (a few seconds by default); running out of either, "
    "or printing data nested thousands of levels deep, aborts the call with no output, so keep loops "
    "bounded and data small. `stdin` and `session_id` are described with the parameters."
)


def parameters_schema() -> dict:
    """The parameters schema, its `code` description naming the offered modules."""
    schema = runner.json.loads(runner.json.dumps(runner.PARAMETERS_SCHEMA))
    code = schema["properties"]["code"]
    code["description"] += (
        " stdout and stderr are each capped at 256 KiB; recursion deeper than 1,000 calls raises "
        "RecursionError."
    )
    code["description"] += f" Standard-library modules that can be imported: {OFFERED_MODULES}; any other import fails."
    code["description"] += " " + runner.SHOW_DESCRIPTION
    return schema


def attach(kind: str, mime_type: str, data, uri: str) -> None:
    """`show`'s way to the host: one block through the `content` import;
    a refusal becomes a ValueError the code sees (the host fails the call
    either way)."""
    if kind == "image":
        block = content.Block_Image(content.Media(mime_type=mime_type, data=data))
    elif kind == "audio":
        block = content.Block_Audio(content.Media(mime_type=mime_type, data=data))
    else:
        body = content.Body_Text(data) if isinstance(data, str) else content.Body_Blob(data)
        block = content.Block_Embedded(content.Embedded(uri=uri, mime_type=mime_type, body=body))
    try:
        content.attach(block)
    except Err as e:
        raise ValueError(f"the host refused the {mime_type} block: {e.value}") from None


runner.ATTACH = attach


class Metadata(exports.Metadata):
    def name(self) -> str:
        return "run_python"

    def description(self) -> str:
        return DESCRIPTION

    def parameters(self) -> str:
        return runner.json.dumps(parameters_schema())

    def output(self) -> str | None:
        return runner.json.dumps(runner.OUTPUT_SCHEMA)


class Handler(exports.Handler):
    def call(self, arguments: str) -> str:
        try:
            code, stdin = runner.check_arguments(runner.json.loads(arguments))
        except runner.ArgumentError as e:
            raise Err(ToolError(message=e.message, code=e.code))
        except ValueError as e:
            raise Err(ToolError(message=f"the arguments are not valid JSON: {e}", code="invalid_arguments"))
        return runner.dumps_output(runner.execute(code, stdin, NAMESPACE))
