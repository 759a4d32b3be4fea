"""`airlock_tool`: write an Airlock tool in Python as one typed function.

A tool is a WebAssembly component of the `airlock:tool@0.3.0` world, built
with componentize-py. This package is the glue: decorate a function with
type hints with `@tool`, export it with `export`, and the component's
`metadata` (name, description, JSON Schemas of the arguments and of the
result, derived from the hints) and `handler` are written for you.

    from dataclasses import dataclass
    from airlock_tool import ToolError, export, tool

    @dataclass
    class Greeting:
        message: str

    @tool
    def greet(name: str, excited: bool = False) -> Greeting:
        \"\"\"Greets a person by name.

        Args:
            name: Who to greet.
            excited: End with an exclamation mark.
        \"\"\"
        if not name.strip():
            raise ToolError("`name` is empty: pass the name of a person", code="empty_name")
        return Greeting(f"Hello, {name}{'!' if excited else '.'}")

    Metadata, Handler = export(greet)

Build it (from the directory of `app.py`, with the WIT of the contract in
`wit/`): `componentize-py -d wit -w tool componentize -p . app -o greet.wasm`.

The name is the function's (or `@tool(name=...)`); the description is the
docstring's text before its sections (or `@tool(description=...)`); each
parameter's description is its line under `Args:`, or
`Annotated[T, "text"]` / `Annotated[T, Param(description=..., minimum=0)]`.
Parameters with a default are optional: their schema also accepts `null`,
which means the same as leaving the argument out (the default is used),
and carries no `default` keyword (a default is restated in the
description); see `airlock_tool.schema`. Unknown arguments are refused by
the schema (`additionalProperties: false`), so the host rejects them
before the tool runs.

Errors: a `ToolError` becomes the `tool-error` the model reads, with its
code; any other exception becomes a `tool-error` with code `exception`
naming the exception type and its message, so a bug shows up as a
readable failure instead of a trap.

Who the call is for: a parameter annotated `Caller` receives the caller
(principal, the operator's attributes and roles, call and session ids); it
is not part of the schema and nothing in it comes from the model.

Trust: the decorated function is the author's; `arguments` come from the
host, already validated against the schema derived here, but the handler
still checks their shape (a JSON object) before using them.
"""

import dataclasses
import inspect
import json
import re
import typing

from .schema import Field, Param, from_json, object_schema, present, schema_of, split_annotated, to_json

__all__ = ["Caller", "Param", "Tool", "ToolError", "export", "tool"]

# What the host accepts as a tool name (see `wit/tool.wit`).
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# The code of a `tool-error` made from an exception that is not a ToolError.
EXCEPTION_CODE = "exception"
# Docstring section headers that end the description.
_SECTIONS = ("Args:", "Arguments:", "Parameters:", "Returns:", "Raises:", "Examples:", "Example:", "Notes:")


class ToolError(Exception):
    """A failure the tool reports on purpose. The model reads `message`, so
    say what went wrong and what would work instead; `code` is an optional
    machine-readable code such as `not_found`."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code else self.message


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who the current call acts for, as the host knows it (the
    `airlock:tool/caller` import). Nothing in it comes from the model."""

    # The authenticated principal, e.g. `alice`.
    principal: str
    # The principal's attributes from the operator's entities file, by
    # name, in Cedar's JSON form (a set is a list, a record a dict).
    attributes: dict[str, typing.Any]
    # Entities the principal is in, as (type, id), e.g. ("Airlock::Role", "customer").
    parents: list[tuple[str, str]]
    # The front end's id of this call (empty when it gave none).
    call_id: str
    # The session the call runs in, for a tool the operator runs with sessions.
    session_id: str | None

    @staticmethod
    def current() -> "Caller":
        """The caller of the call being served, read from the host; an
        empty caller outside a component (unit tests of a tool's logic)."""
        try:
            from wit_world.imports import caller  # type: ignore[import-not-found]
        except ImportError:
            return Caller("", {}, [], "", None)
        info = caller.get()
        attributes = {}
        for a in info.attributes:
            # The host sends JSON text; a value that does not parse is kept
            # as a string rather than lost.
            try:
                attributes[a.name] = json.loads(a.value)
            except ValueError:
                attributes[a.name] = a.value
        parents = [(p.entity_type, p.id) for p in info.parents]
        return Caller(info.principal, attributes, parents, info.call_id, info.session_id)

    def attribute(self, name: str) -> typing.Any:
        """The attribute `name`, or None when the principal has none."""
        return self.attributes.get(name)

    def strings(self, name: str) -> list[str]:
        """The string elements of attribute `name` (a string is one element,
        a set of strings many); empty when missing or holding no strings."""
        value = self.attributes.get(name)
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return [v for v in value if isinstance(v, str)]
        return []

    def has_role(self, role: str) -> bool:
        """Whether the principal is in the role `Airlock::Role::"<role>"`."""
        return ("Airlock::Role", role) in self.parents


def _description_and_args(doc: str | None) -> tuple[str, dict[str, str]]:
    """The text of a docstring before its sections, and the parameter
    descriptions of its `Args:` section (Google style)."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section = None
    current = None
    for line in lines:
        stripped = line.strip()
        if stripped in _SECTIONS and not line.startswith(" "):
            section = stripped
            current = None
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args:", "Arguments:", "Parameters:"):
            match = re.match(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if match and (len(line) - len(line.lstrip())) <= 4:
                current = match.group(1).lstrip("*")
                params[current] = match.group(2).strip()
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
    paragraphs = "\n".join(summary).strip().split("\n\n")
    description = "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())
    return description, params


class Tool:
    """A decorated function with its name, description and schemas. Call
    it like the function; `call_json` is what the component's handler runs."""

    def __init__(self, func: typing.Callable[..., typing.Any], name: str | None, description: str | None) -> None:
        self.func = func
        self.name = name or func.__name__
        if not NAME_PATTERN.match(self.name):
            raise ValueError(
                f"tool name {self.name!r} is not accepted by the host: use 1-64 letters, digits, `_` or `-`"
            )
        doc_description, arg_docs = _description_and_args(func.__doc__)
        self.description = description or doc_description
        if not self.description:
            raise ValueError(f"tool {self.name!r} has no description: write a docstring or pass description=")
        hints = typing.get_type_hints(func, include_extras=True)
        self._caller_param: str | None = None
        self._params: list[Field] = []
        for param in inspect.signature(func).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"{self.name}: *{param.name} has no JSON Schema; name each argument")
            if param.kind is param.POSITIONAL_ONLY:
                raise TypeError(f"{self.name}: {param.name} is positional-only; arguments are passed by name")
            if param.name not in hints:
                raise TypeError(f"{self.name}: parameter {param.name} has no type hint; the schema is made from it")
            hint = hints[param.name]
            if hint is Caller:
                self._caller_param = param.name
                continue
            if param.name in arg_docs:
                hint = _with_doc(hint, arg_docs[param.name])
            has_default = param.default is not param.empty
            self._params.append(Field(param.name, hint, not has_default, param.default, has_default))
        self.parameters = object_schema(self._params)
        returns = hints.get("return", typing.Any)
        self.output = None if returns is typing.Any else schema_of(returns)
        self._returns = returns

    def __call__(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        return self.func(*args, **kwargs)

    def call_json(self, arguments: str) -> str:
        """Run the tool on `arguments` (a JSON object as text) and return the
        result as JSON text. Raises `ToolError` for unusable arguments, for
        a `ToolError` of the function, and for any other exception (code
        `exception`)."""
        try:
            values = json.loads(arguments)
        except ValueError as e:
            raise ToolError(f"the arguments are not valid JSON: {e}", code="invalid_arguments") from None
        if not isinstance(values, dict):
            raise ToolError("the arguments must be a JSON object", code="invalid_arguments")
        known = {f.name for f in self._params}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ToolError(
                f"unknown arguments {', '.join(unknown)}; accepted: {', '.join(sorted(known)) or 'none'}",
                code="invalid_arguments",
            )
        kwargs: dict[str, typing.Any] = {}
        for f in self._params:
            if present(f, values):
                kwargs[f.name] = from_json(f.hint, values[f.name])
            elif f.required:
                raise ToolError(f"the argument {f.name} is required", code="invalid_arguments")
        if self._caller_param is not None:
            kwargs[self._caller_param] = Caller.current()
        try:
            result = self.func(**kwargs)
            return json.dumps(to_json(result), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except ToolError:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes a readable tool error
            raise ToolError(f"the tool failed with {type(e).__name__}: {e}", code=EXCEPTION_CODE) from None


def _with_doc(hint: typing.Any, doc: str) -> typing.Any:
    """`hint` with `doc` as its description, unless its own `Annotated`
    extras (which win over the docstring) already describe it."""
    _, extra = split_annotated(hint)
    if "description" in extra:
        return hint
    return typing.Annotated[hint, doc]


@typing.overload
def tool(func: typing.Callable[..., typing.Any], /) -> Tool: ...


@typing.overload
def tool(*, name: str | None = None, description: str | None = None) -> typing.Callable[[typing.Callable[..., typing.Any]], Tool]: ...


def tool(
    func: typing.Callable[..., typing.Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> typing.Any:
    """Make `func` a tool: `@tool` or `@tool(name="...", description="...")`.
    Raises at build time (when componentize-py imports the app) if the
    name, the description or a type hint cannot be used."""

    def wrap(f: typing.Callable[..., typing.Any]) -> Tool:
        return Tool(f, name, description)

    return wrap(func) if func is not None else wrap


def export(t: Tool) -> tuple[type, type]:
    """The component's `Metadata` and `Handler` classes for tool `t`; bind
    them to those names in the app module: `Metadata, Handler = export(t)`."""
    if not isinstance(t, Tool):
        raise TypeError("export() takes a function decorated with @tool")
    parameters = json.dumps(t.parameters, separators=(",", ":"))
    output = None if t.output is None else json.dumps(t.output, separators=(",", ":"))

    class Metadata:
        """The `airlock:tool/metadata` export."""

        def name(self) -> str:
            return t.name

        def description(self) -> str:
            return t.description

        def parameters(self) -> str:
            return parameters

        def output(self) -> str | None:
            return output

    class Handler:
        """The `airlock:tool/handler` export."""

        def call(self, arguments: str) -> str:
            try:
                return t.call_json(arguments)
            except ToolError as e:
                from componentize_py_types import Err  # type: ignore[import-not-found]
                from wit_world.exports.handler import ToolError as WitToolError  # type: ignore[import-not-found]

                raise Err(WitToolError(message=e.message, code=e.code)) from None

    return Metadata, Handler
