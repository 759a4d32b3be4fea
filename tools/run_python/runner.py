"""The interpreter logic of `run_python`, free of component bindings.

`execute(code, stdin)` runs a Python snippet and returns the tool's result
as a dict: what it printed, the value of its last expression and, if it
raised, the exception with a traceback of the submitted code. The code may
hand bytes it made to the host with `show(data, mime_type)`, which `app.py`
connects to the `content` import (`ATTACH`). `app.py` wraps
it into the `airlock:tool` world; the unit tests (`test_runner.py`) call it
directly with any CPython >= 3.11.

Trust: `code` and `stdin` come from a model and are hostile by assumption.
The sandbox is the component itself (no filesystem, network or environment
unless the operator grants them; the host's deadline, fuel and memory caps).
This module only makes sure that whatever the code does ends as an ordinary
result: every exception, `SystemExit` included, is caught, and everything
that crosses back to the host is capped by a named constant below. What
`show` hands over is also checked by the host as it arrives (its caps on
content blocks, the bytes against the media type).
"""

import ast
import builtins
import io
import itertools
import json
import reprlib
import sys

# Largest `code` accepted, in bytes (UTF-8).
MAX_CODE_BYTES = 1 << 20
# Largest `stdin` accepted, in bytes (UTF-8).
MAX_STDIN_BYTES = 1 << 20
# Bytes kept of each of stdout and stderr; the rest is cut with a note. Both
# streams and the result together stay under the host's default 1 MiB
# output cap.
MAX_STREAM_BYTES = 256 << 10
# Largest JSON text of `result` (and of `result_repr`).
MAX_RESULT_BYTES = 256 << 10
# Largest `error.message` and `error.stack`.
MAX_ERROR_BYTES = 64 << 10
# Nesting beyond which a result is not converted to JSON (the host's JSON
# parser stops at 128 levels).
MAX_RESULT_DEPTH = 100
# Name the submitted code has in tracebacks.
CODE_FILENAME = "<code>"
# Most blocks `show` attaches to one call's result.
MAX_SHOWN = 16
# Longest media type `show` accepts, in characters.
MAX_MIME_TYPE_CHARS = 255
# Media types `show` attaches as a picture, and as a sound; any other type
# is attached as a file (an embedded resource).
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
AUDIO_TYPES = ("audio/wav", "audio/mpeg", "audio/ogg", "audio/flac")
# What `show` tells the model, in the `code` parameter's description.
SHOW_DESCRIPTION = (
    "show(data, mime_type) returns bytes the code made to the user beside the result: "
    f"{', '.join(IMAGE_TYPES)} as a picture, {', '.join(AUDIO_TYPES)} as a sound, any other type "
    "(e.g. image/svg+xml, with data a str) as a file; "
    f"at most {MAX_SHOWN} per call, each checked and capped by the host, which fails the call if it refuses one."
)
# Frames kept at each end of a very deep traceback (RecursionError).
TRACEBACK_EDGE_FRAMES = 20

# The optional members accept `null`, as run_js's do: the strict-mode
# converters of agent frameworks (the OpenAI Agents SDK, LangChain, Pydantic
# AI) make every member required and keep its type, so `null` is the only
# way a model can leave one out there; with `"type": "string"` it would have
# to invent a session id (an empty one is refused).
PARAMETERS_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "maxLength": MAX_CODE_BYTES,
            "description": "Python source, run as a module. The value of its last "
            "statement, if that is an expression, is returned as `result`.",
        },
        "stdin": {
            "type": ["string", "null"],
            "maxLength": MAX_STDIN_BYTES,
            "description": "Text the code reads through input() or sys.stdin. "
            "Empty when omitted.",
        },
        "session_id": {
            "type": ["string", "null"],
            "description": "Optional session id (1-64 characters: letters, digits, `_`, `-`, `.`). "
            "Calls with the same id continue in the same interpreter, so variables, functions and "
            "imports from earlier calls are still defined. The state lives only inside that "
            "session: it is lost when the session sits idle too long, when a call times out, "
            "runs out of memory or crashes (the result then says the session was reset), and it "
            "is never visible to other sessions. Omit it for a fresh interpreter: without a "
            "session nothing persists between calls.",
        },
    },
    "required": ["code"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "stdout": {"type": "string", "description": "What print() and sys.stdout received (capped)."},
        "stderr": {"type": "string", "description": "What sys.stderr received (capped)."},
        "result": {
            "description": "The value of the last expression as JSON, or null (no value, "
            "an error, or no JSON form)."
        },
        "result_repr": {
            "type": "string",
            "description": "repr() of the last value when it has no faithful JSON form "
            "(or its JSON was too large).",
        },
        "error": {
            "type": "object",
            "description": "The uncaught exception, if the code raised one.",
            "properties": {
                "name": {"type": "string", "description": "The exception class, e.g. ValueError."},
                "message": {"type": "string", "description": "str() of the exception."},
                "stack": {
                    "type": "string",
                    "description": "The traceback, as Python prints it, of the submitted code.",
                },
            },
            "required": ["name", "message", "stack"],
            "additionalProperties": False,
        },
    },
    "required": ["stdout", "stderr", "result"],
    "additionalProperties": False,
}


# What the last call left behind besides its namespace (its final value or
# exception), not freed before the next call starts: without a session the
# component instance is discarded after the call anyway, and freeing a deeply
# nested structure recurses in C (list_dealloc) deep enough to overflow the
# wasm stack. In a session, the next call drops it.
RETAINED = []

# The error for a `session_id` argument that reached the interpreter: the
# host consumes `session_id` when it keeps sessions for this tool, so seeing
# it here means the operator has not enabled them.
SESSIONS_DISABLED = (
    "this host runs every run_python call in a fresh interpreter (the operator has not enabled "
    "sessions for this tool): omit `session_id` and put everything a call needs in its `code`"
)


# The function that hands a block to the host: ATTACH(kind, mime_type, data,
# uri), `kind` being "image", "audio" or "file" and `data` bytes or (for a
# file) a str; it raises ValueError with the host's reason for a refused
# block. `app.py` sets it to the `content` import; outside a component it
# is None and `show` keeps the blocks in SHOWN, for the unit tests.
ATTACH = None
SHOWN = []


def make_show():
    """A fresh `show` for one call: it counts the blocks of that call."""
    count = [0]

    def show(data, mime_type="image/png"):
        """Show `data` (bytes, or a str for a text file such as an SVG) to
        the user beside the result, as a picture, a sound or a file of type
        `mime_type`."""
        if not isinstance(mime_type, str) or not 0 < len(mime_type) <= MAX_MIME_TYPE_CHARS:
            raise TypeError(f"show(): mime_type must be a media type such as 'image/png' (1-{MAX_MIME_TYPE_CHARS} characters)")
        mime_type = mime_type.strip().lower()
        if mime_type in IMAGE_TYPES:
            kind = "image"
        elif mime_type in AUDIO_TYPES:
            kind = "audio"
        else:
            kind = "file"
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        if not isinstance(data, bytes) and not (kind == "file" and isinstance(data, str)):
            accepted = "bytes or a str" if kind == "file" else "bytes"
            raise TypeError(f"show(): data for {mime_type} must be {accepted}, not {type(data).__name__}")
        if count[0] >= MAX_SHOWN:
            raise RuntimeError(f"show(): at most {MAX_SHOWN} blocks are shown per call")
        count[0] += 1
        uri = f"airlock:run_python/shown-{count[0]}"
        if ATTACH is None:
            SHOWN.append((kind, mime_type, data, uri))
        else:
            ATTACH(kind, mime_type, data, uri)

    return show


class ArgumentError(Exception):
    """The arguments are unusable; the message is written for the model."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class Capture(io.TextIOBase):
    """A text stream that keeps at most `cap` bytes (UTF-8) and counts the rest."""

    def __init__(self, cap):
        super().__init__()
        self._parts = []
        self._room = cap
        self._cut = 0

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        size = utf8_len(s)
        if self._cut == 0 and size <= self._room:
            self._parts.append(s)
            self._room -= size
        elif self._cut == 0:
            # Keep a prefix that fits; once something was cut, later writes
            # are cut too, so the kept text is a prefix of what was printed.
            kept = clip(s, self._room)
            self._parts.append(kept)
            self._cut += size - utf8_len(kept)
            self._room = 0
        else:
            self._cut += size
        return len(s)

    def getvalue(self):
        text = "".join(self._parts)
        if self._cut:
            if text and not text.endswith("\n"):
                text += "\n"
            text += f"[… {self._cut} bytes cut]"
        return text


def utf8_len(s):
    return len(s.encode("utf-8", "surrogatepass"))


def clip(s, cap):
    """The longest prefix of `s` whose UTF-8 form fits in `cap` bytes."""
    data = s.encode("utf-8", "surrogatepass")
    if len(data) <= cap:
        return s
    return data[:cap].decode("utf-8", "ignore")


def truncate(s, cap):
    """`s` cut to at most `cap` bytes, with a note saying how much was cut."""
    size = utf8_len(s)
    if size <= cap:
        return s
    kept = clip(s, cap)
    return kept + f"[… {size - utf8_len(kept)} bytes cut]"


class NotJson(Exception):
    """The value has no JSON form."""


def to_json(value, depth, seen, lossy):
    """A JSON-ready copy of `value`; sets lossy[0] when something changed on
    the way (non-string keys, non-finite floats, integers too large for a
    JSON reader). Raises NotJson for anything else."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        # Larger integers overflow the float a JSON reader falls back to.
        if abs(value) >= 1 << 1000:
            raise NotJson()
        if abs(value) > 1 << 53:
            lossy[0] = True
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise NotJson()
        return float(value)
    if depth >= MAX_RESULT_DEPTH:
        raise NotJson()
    if isinstance(value, (list, tuple, dict)):
        if id(value) in seen:
            raise NotJson()
        seen.add(id(value))
        try:
            if isinstance(value, dict):
                out = {}
                for k, v in value.items():
                    if not isinstance(k, str):
                        if k is None or isinstance(k, (bool, int, float)):
                            lossy[0] = True
                            k = json.dumps(k)
                        else:
                            raise NotJson()
                    out[k] = to_json(v, depth + 1, seen, lossy)
                return out
            return [to_json(v, depth + 1, seen, lossy) for v in value]
        finally:
            seen.discard(id(value))
    raise NotJson()


class ResultRepr(reprlib.Repr):
    """repr() bounded in depth and width. A plain repr() of a deeply nested
    list recurses in C and can overflow the wasm stack (a trap, losing all
    output); this one stops at `maxlevel`. Unlike reprlib's default, dicts
    keep their insertion order."""

    def __init__(self):
        super().__init__()
        self.maxlevel = 20
        self.maxtuple = self.maxlist = self.maxarray = self.maxdict = 1000
        self.maxset = self.maxfrozenset = self.maxdeque = 1000
        self.maxstring = self.maxother = MAX_RESULT_BYTES
        self.maxlong = 4000
        self._active = set()

    def repr1(self, x, level):
        # reprlib has no cycle check: show a cycle as CPython does.
        if isinstance(x, (list, dict)):
            if id(x) in self._active:
                return "[...]" if isinstance(x, list) else "{...}"
            self._active.add(id(x))
            try:
                return super().repr1(x, level)
            finally:
                self._active.discard(id(x))
        return super().repr1(x, level)

    def repr_dict(self, x, level):
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [
            f"{self.repr1(k, level - 1)}: {self.repr1(x[k], level - 1)}"
            for k in itertools.islice(x, self.maxdict)
        ]
        if len(x) > self.maxdict:
            pieces.append("...")
        return "{" + ", ".join(pieces) + "}"


RESULT_REPR = ResultRepr()


def safe_repr(value):
    try:
        return RESULT_REPR.repr(value)
    except BaseException as e:  # noqa: BLE001 - a broken __repr__ is the code's problem
        return f"<{type(value).__name__} object; repr() raised {type(e).__name__}>"


def shape_result(value):
    """(result, result_repr) of the last expression's value."""
    if value is None:
        return None, None
    lossy = [False]
    try:
        converted = to_json(value, 0, set(), lossy)
        text = json.dumps(converted, ensure_ascii=False)
    except (NotJson, RecursionError, MemoryError, ValueError, TypeError):
        return None, truncate(safe_repr(value), MAX_RESULT_BYTES)
    if utf8_len(text) > MAX_RESULT_BYTES:
        return None, truncate(text, MAX_RESULT_BYTES)
    return converted, truncate(safe_repr(value), MAX_RESULT_BYTES) if lossy[0] else None


def caret_line(line, frame_line, colno, end_lineno, end_colno):
    """The `^^^^` marker under the failing part of a line, as CPython prints
    it, or None when it would mark the whole line."""
    if colno is None or end_colno is None or end_lineno != frame_line:
        return None
    raw = line.encode("utf-8")
    start = len(raw[:colno].decode("utf-8", "replace"))
    end = len(raw[:end_colno].decode("utf-8", "replace"))
    stripped = line.lstrip()
    indent = len(line) - len(stripped)
    if start <= indent and end >= len(line.rstrip()):
        return None
    return " " * start + "^" * max(1, end - start)


def format_frames(tb, source_lines):
    """Traceback lines of the frames in `tb`, without reading any file: the
    submitted code's lines come from `source_lines`; other files (the
    standard library, which the component bundles without sources) are
    shown without a source line."""
    entries = []
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        lineno = tb.tb_lineno
        positions = None
        try:
            positions = list(code.co_positions())[tb.tb_lasti // 2]
        except (AttributeError, IndexError, ValueError):
            pass
        entries.append((code.co_filename, lineno, code.co_name, positions))
        tb = tb.tb_next
    lines = []
    if len(entries) > 2 * TRACEBACK_EDGE_FRAMES:
        hidden = len(entries) - 2 * TRACEBACK_EDGE_FRAMES
        entries = (
            entries[:TRACEBACK_EDGE_FRAMES]
            + [None]
            + entries[-TRACEBACK_EDGE_FRAMES:]
        )
    else:
        hidden = 0
    for entry in entries:
        if entry is None:
            lines.append(f"  [Previous frames repeated or omitted: {hidden} more]\n")
            continue
        filename, lineno, name, positions = entry
        lines.append(f'  File "{filename}", line {lineno}, in {name}\n')
        if filename == CODE_FILENAME and lineno is not None and 1 <= lineno <= len(source_lines):
            line = source_lines[lineno - 1].rstrip("\r\n")
            stripped = line.strip()
            if stripped:
                lines.append(f"    {stripped}\n")
                if positions is not None:
                    _, end_lineno, colno, end_colno = positions
                    indent = len(line) - len(line.lstrip())
                    marker = caret_line(line, lineno, colno, end_lineno, end_colno)
                    if marker is not None:
                        lines.append("    " + marker[indent:] + "\n")
    return lines


def exception_only(exc):
    """The last line(s) of a traceback: `Name: message` (and, for a
    SyntaxError, the offending line with a caret)."""
    name = qualified_name(type(exc))
    if isinstance(exc, SyntaxError):
        out = []
        if exc.lineno is not None:
            out.append(f'  File "{exc.filename or CODE_FILENAME}", line {exc.lineno}\n')
        if exc.text:
            text = exc.text.rstrip("\r\n")
            stripped = text.lstrip()
            out.append(f"    {stripped}\n")
            if exc.offset:
                shift = len(text) - len(stripped)
                start = max(exc.offset - 1 - shift, 0)
                end = start + 1
                end_offset = getattr(exc, "end_offset", None)
                if end_offset and getattr(exc, "end_lineno", exc.lineno) == exc.lineno:
                    end = max(end_offset - 1 - shift, start + 1)
                out.append("    " + " " * start + "^" * (end - start) + "\n")
        out.append(f"{name}: {exc.msg}\n")
        return out
    message = exception_message(exc)
    return [f"{name}: {message}\n" if message else f"{name}\n"]


def qualified_name(cls):
    """`ValueError`, or `json.decoder.JSONDecodeError` outside builtins."""
    module = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in (None, "builtins", "__main__") else f"{module}.{name}"


def exception_message(exc):
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001
        message = "<exception str() failed>"
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        message += "".join("\n" + str(note) for note in notes)
    return message


def format_exception(exc, source_lines):
    """The full traceback text of `exc`, with its cause/context chain, as
    CPython prints it."""
    # Newest first; each entry carries the sentence printed after it, which
    # links it to the exception it led to.
    chain = [(exc, None)]
    seen = {id(exc)}
    current = exc
    while len(chain) < 10:
        if current.__cause__ is not None:
            nxt, joiner = current.__cause__, "The above exception was the direct cause of the following exception:"
        elif current.__context__ is not None and not current.__suppress_context__:
            nxt, joiner = current.__context__, "During handling of the above exception, another exception occurred:"
        else:
            break
        if id(nxt) in seen:
            break
        seen.add(id(nxt))
        chain.append((nxt, joiner))
        current = nxt
    lines = []
    for item, joiner in reversed(chain):
        tb = item.__traceback__
        # The outer frames belong to this module (the `exec` call, the
        # parser), not to the submitted code.
        while tb is not None and tb.tb_frame.f_code.co_filename != CODE_FILENAME:
            tb = tb.tb_next
        if tb is not None:
            lines.append("Traceback (most recent call last):\n")
            lines.extend(format_frames(tb, source_lines))
        lines.extend(exception_only(item))
        if joiner is not None:
            lines.append(f"\n{joiner}\n\n")
    return "".join(lines)


def describe_error(exc, source_lines):
    try:
        stack = format_exception(exc, source_lines)
    except BaseException as e:  # noqa: BLE001
        stack = f"(the traceback could not be formatted: {type(e).__name__})"
    message = exception_message(exc)
    return {
        "name": type(exc).__name__,
        "message": truncate(message, MAX_ERROR_BYTES),
        "stack": truncate(stack.rstrip("\n"), MAX_ERROR_BYTES),
    }


def split_code(code):
    """Compile `code` into (body, last expression or None)."""
    tree = ast.parse(code, filename=CODE_FILENAME, mode="exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, CODE_FILENAME, "exec")
    return body, (compile(last, CODE_FILENAME, "eval") if last is not None else None)


def check_arguments(arguments):
    """(code, stdin) from the decoded arguments, or ArgumentError."""
    if not isinstance(arguments, dict):
        raise ArgumentError("invalid_arguments", "the arguments must be a JSON object with a `code` string")
    unknown = sorted(set(arguments) - {"code", "stdin", "session_id"})
    if unknown:
        raise ArgumentError(
            "invalid_arguments", f"unknown argument(s) {unknown}: only `code`, `stdin` and `session_id` exist"
        )
    # `null` is an optional argument left empty (as in run_js).
    if arguments.get("session_id") is not None:
        raise ArgumentError("sessions_disabled", SESSIONS_DISABLED)
    code = arguments.get("code")
    stdin = arguments.get("stdin")
    if stdin is None:
        stdin = ""
    if not isinstance(code, str):
        raise ArgumentError("invalid_arguments", "`code` must be a string of Python source")
    if not isinstance(stdin, str):
        raise ArgumentError("invalid_arguments", "`stdin` must be a string")
    if utf8_len(code) > MAX_CODE_BYTES:
        raise ArgumentError("code_too_large", f"`code` is {utf8_len(code)} bytes; the limit is {MAX_CODE_BYTES} bytes")
    if utf8_len(stdin) > MAX_STDIN_BYTES:
        raise ArgumentError("stdin_too_large", f"`stdin` is {utf8_len(stdin)} bytes; the limit is {MAX_STDIN_BYTES} bytes")
    return code, stdin


def new_namespace():
    """The globals of a fresh `__main__` for the submitted code."""
    namespace = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
    # `exit()`/`quit()` come from the `site` module, which the component may
    # not run: provide them either way.
    for name in ("exit", "quit"):
        if not hasattr(builtins, name):
            namespace[name] = sys.exit
    return namespace


def execute(code, stdin="", namespace=None):
    """Run `code` with `stdin` in `namespace` (a fresh one when None) and
    return the tool's result dict. Whatever the code defines stays in
    `namespace`, so a caller that passes the same dict again continues where
    the last call left off."""
    if namespace is None:
        namespace = new_namespace()
    # A fresh `show` each call: its count of blocks is the call's, also in a
    # session, whose namespace outlives the call.
    namespace["show"] = make_show()
    RETAINED.clear()
    RETAINED.append(namespace)
    stdout_capture = Capture(MAX_STREAM_BYTES)
    stderr_capture = Capture(MAX_STREAM_BYTES)
    output = {"stdout": "", "stderr": "", "result": None}
    source_lines = code.splitlines()
    value = None
    error = None

    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), stdout_capture, stderr_capture
    try:
        try:
            body, last = split_code(code)
        except (SyntaxError, ValueError) as e:
            # ValueError: source code with NUL bytes.
            error = describe_error(e, source_lines)
        else:
            try:
                exec(body, namespace)
                if last is not None:
                    value = eval(last, namespace)
                    RETAINED.append(value)
            except SystemExit as e:
                # sys.exit(0) / sys.exit() / exit() end the program normally.
                if e.code not in (None, 0):
                    error = describe_error(e, source_lines)
            except BaseException as e:  # noqa: BLE001 - every failure is the model's to read
                RETAINED.append(e)
                error = describe_error(e, source_lines)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved

    if error is not None:
        output["error"] = error
    else:
        try:
            output["result"], result_repr = shape_result(value)
        except BaseException as e:  # noqa: BLE001
            output["result"], result_repr = None, f"(the value could not be shown: {type(e).__name__})"
        if result_repr is not None:
            output["result_repr"] = result_repr
    output["stdout"] = stdout_capture.getvalue()
    output["stderr"] = stderr_capture.getvalue()
    return output


def dumps_output(output):
    """The result as JSON text that is valid UTF-8 (lone surrogates the code
    printed become U+FFFD, since a component string cannot carry them)."""
    text = json.dumps(output, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
