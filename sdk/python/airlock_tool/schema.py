"""JSON Schemas from Python type hints, and JSON values back into those types.

`schema_of(hint)` turns a type hint into the JSON Schema (draft 2020-12) the
host validates arguments against; `from_json(hint, value)` turns a validated
JSON value into the hinted Python value (dataclasses, enums, tuples);
`to_json(value)` turns a handler's result into plain JSON data.

Trust: the hints come from the tool's author and are trusted; the JSON
values come from the host, which validated them against the schema derived
here, so `from_json` only converts and never has to defend against a value
of the wrong shape (it raises `TypeError` if one arrives anyway).

Supported hints: `str`, `int`, `float`, `bool`, `None`, `list[T]`,
`tuple[T, ...]`, `tuple[A, B]`, `dict[str, T]`, `T | None` / `Optional[T]`,
unions, `Literal[...]`, `Enum` subclasses (by value), dataclasses,
`TypedDict` (with `NotRequired` / `Required`), `typing.Any`, and
`Annotated[T, Param(...)]` or `Annotated[T, "description"]` for
descriptions and extra JSON Schema keywords. Recursive types are refused:
the schema is inlined, as providers' strict modes want it.

Optional members follow the rule every Airlock tool follows, so that the
strict converters of agent frameworks take the schema as it is: a member
that may be left out (a parameter or field with a default, a `NotRequired`
key) also accepts `null`, the way `Optional[T]` does (`null` added to its
`type`, and to its `enum`), and `null` there means "left out" (the default
is used). No schema carries a `default` keyword (OpenAI's strict mode
refuses it): a default other than `None` is restated in the member's
description (`Default: 1.0.`) unless the description already mentions its
default. A choice (`Literal`, an `Enum`) whose values share one JSON type
states that `type` beside its `enum`.
"""

import collections.abc
import dataclasses
import enum
import json
import types
import typing

# Nesting of types beyond which a hint is refused as too deep (and most
# likely recursive).
MAX_TYPE_DEPTH = 32


class Param:
    """Extra JSON Schema for one parameter or field, used as
    `Annotated[int, Param(description="...", minimum=0)]`. Keyword
    arguments are JSON Schema keywords (`min_length` is written
    `minLength`: pass them as JSON Schema spells them, through `**{...}` if
    needed)."""

    def __init__(self, description: str | None = None, **keywords: typing.Any) -> None:
        self.schema: dict[str, typing.Any] = dict(keywords)
        if description is not None:
            self.schema["description"] = description


def split_annotated(hint: typing.Any) -> tuple[typing.Any, dict[str, typing.Any]]:
    """The bare type of `hint` and the schema its `Annotated` extras add."""
    extra: dict[str, typing.Any] = {}
    while typing.get_origin(hint) is typing.Annotated:
        for meta in hint.__metadata__:
            if isinstance(meta, Param):
                extra.update(meta.schema)
            elif isinstance(meta, str):
                extra["description"] = meta
        hint = hint.__origin__
    return hint, extra


def _is_typeddict(hint: typing.Any) -> bool:
    return isinstance(hint, type) and typing.is_typeddict(hint)


def _is_union(origin: typing.Any) -> bool:
    return origin is typing.Union or origin is types.UnionType


def schema_of(hint: typing.Any, _depth: int = 0) -> dict[str, typing.Any]:
    """The JSON Schema of values of type `hint`. Raises `TypeError` naming
    the hint when it has no JSON form."""
    if _depth > MAX_TYPE_DEPTH:
        raise TypeError(f"types nested more than {MAX_TYPE_DEPTH} deep (recursive types are not supported)")
    hint, extra = split_annotated(hint)
    schema = _bare_schema(hint, _depth + 1)
    schema.update(extra)
    return schema


def _bare_schema(hint: typing.Any, depth: int) -> dict[str, typing.Any]:
    if hint is typing.Any:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    # bool before int: bool is a subclass of int.
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _choice([member.value for member in hint])
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object_schema(hint, _dataclass_fields(hint), depth)
    if _is_typeddict(hint):
        return _object_schema(hint, _typeddict_fields(hint), depth)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        return _choice(list(args))
    if _is_union(origin):
        members = [a for a in args if a is not type(None)]
        nullable = len(members) < len(args)
        if len(members) == 1:
            inner = schema_of(members[0], depth)
            return _nullable(inner) if nullable else inner
        alternatives = [schema_of(a, depth) for a in members]
        if nullable:
            alternatives.append({"type": "null"})
        return {"anyOf": alternatives}
    if origin in (list, collections.abc.Sequence):
        item = args[0] if args else typing.Any
        return {"type": "array", "items": schema_of(item, depth)}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_of(args[0], depth)}
        items = [schema_of(a, depth) for a in args]
        return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items)}
    if origin is dict:
        key = args[0] if args else str
        if key is not str:
            raise TypeError(f"{hint!r}: JSON object keys are strings, so use dict[str, ...]")
        value = args[1] if len(args) > 1 else typing.Any
        return {"type": "object", "additionalProperties": schema_of(value, depth)}
    if hint in (list, tuple):
        return {"type": "array"}
    if hint is dict:
        return {"type": "object"}
    raise TypeError(
        f"{hint!r} has no JSON Schema: use str, int, float, bool, None, list, tuple, dict[str, T], "
        "Optional, Union, Literal, an Enum, a dataclass or a TypedDict"
    )


def _json_type(value: typing.Any) -> str | None:
    """The JSON type of a constant, or None when it has no single one."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _choice(values: list[typing.Any]) -> dict[str, typing.Any]:
    """An `enum` of `values`, with their `type` when they share one."""
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1 and None not in kinds:
        return {"type": kinds.pop(), "enum": values}
    return {"enum": values}


# Keywords whose subschemas decide what a schema accepts: adding "null" to
# its own `type` would not be enough, so such a schema is wrapped in anyOf.
_COMBINATORS = ("$ref", "anyOf", "oneOf", "allOf", "not", "if", "then", "else")
# Keywords that only describe; they stay outside such a wrapper.
_ANNOTATIONS = ("description", "title", "deprecated", "examples")


def _nullable(schema: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """`schema` that also accepts `null`: "null" added to its `type` (and
    `null` to its `enum`), as Optional[T] gives; a schema without a single
    type is wrapped in `anyOf` with `{"type": "null"}` (a plain `anyOf`
    gets that branch added). A schema that accepts anything is unchanged."""
    if "anyOf" in schema and not any(k in schema for k in ("type", "enum", "const", *_COMBINATORS) if k != "anyOf"):
        branches = schema["anyOf"]
        if any(b.get("type") == "null" for b in branches):
            return schema
        return {**schema, "anyOf": [*branches, {"type": "null"}]}
    if any(k in schema for k in _COMBINATORS):
        outer = {k: schema[k] for k in _ANNOTATIONS if k in schema}
        inner = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
        return {**outer, "anyOf": [inner, {"type": "null"}]}
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str) and kind != "null":
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    if "const" in out:
        constant = out.pop("const")
        out["enum"] = [constant] if constant is None else [constant, None]
    elif "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _with_default_stated(schema: dict[str, typing.Any], default: typing.Any) -> dict[str, typing.Any]:
    """`schema` with `default` restated in its description (there is no
    `default` keyword), unless it is None or the description already
    mentions a default."""
    if default is None:
        return schema
    description = schema.get("description", "")
    if "default" in description.lower():
        return schema
    try:
        shown = json.dumps(to_json(default), ensure_ascii=False)
    except (TypeError, ValueError):
        return schema
    note = f"Default: {shown}."
    return {**schema, "description": f"{description} {note}" if description else note}


class Field(typing.NamedTuple):
    """One property of an object schema."""

    name: str
    hint: typing.Any
    required: bool
    default: typing.Any
    has_default: bool


def _dataclass_fields(cls: type) -> list[Field]:
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = []
    for f in dataclasses.fields(cls):
        has_default = f.default is not dataclasses.MISSING
        required = not has_default and f.default_factory is dataclasses.MISSING
        fields.append(Field(f.name, hints.get(f.name, typing.Any), required, f.default, has_default))
    return fields


def _typeddict_fields(cls: type) -> list[Field]:
    hints = typing.get_type_hints(cls, include_extras=True)
    required_keys = getattr(cls, "__required_keys__", frozenset(hints))
    fields = []
    for name, hint in hints.items():
        # get_type_hints keeps Required/NotRequired only with include_extras;
        # __required_keys__ already accounts for them, so strip them here.
        while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
            hint = typing.get_args(hint)[0]
        fields.append(Field(name, hint, name in required_keys, None, False))
    return fields


def _object_schema(cls: type, fields: list[Field], depth: int) -> dict[str, typing.Any]:
    schema = object_schema(fields, depth)
    doc = _own_doc(cls)
    if doc:
        schema = {"description": doc, **schema}
    return schema


def object_schema(fields: list[Field], depth: int = 0) -> dict[str, typing.Any]:
    """The schema of an object with `fields`: unknown properties refused,
    the optional ones nullable, no `default` keyword (see the module
    documentation)."""
    properties = {}
    for f in fields:
        prop = schema_of(f.hint, depth)
        if not f.required:
            prop = _nullable(prop)
            if f.has_default:
                prop = _with_default_stated(prop, f.default)
        properties[f.name] = prop
    schema: dict[str, typing.Any] = {"type": "object", "properties": properties}
    required = [f.name for f in fields if f.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _own_doc(cls: type) -> str | None:
    """A class's own docstring (dataclasses invent one from the signature,
    which says nothing to a model)."""
    doc = cls.__dict__.get("__doc__")
    if not doc or (dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "(")):
        return None
    return " ".join(doc.split())


def present(f: Field, values: dict[str, typing.Any]) -> bool:
    """Whether `values` gives field `f`: a `null` for an optional field
    means it was left out (its default applies)."""
    return f.name in values and (f.required or values[f.name] is not None)


def from_json(hint: typing.Any, value: typing.Any, _depth: int = 0) -> typing.Any:
    """`value` (validated JSON data) as a value of type `hint`."""
    if _depth > MAX_TYPE_DEPTH:
        raise TypeError(f"types nested more than {MAX_TYPE_DEPTH} deep")
    hint, _ = split_annotated(hint)
    depth = _depth + 1
    if value is None:
        return None
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        fields = [f for f in _dataclass_fields(hint) if present(f, value)]
        return hint(**{f.name: from_json(f.hint, value[f.name], depth) for f in fields})
    if _is_typeddict(hint):
        fields = {f.name: f for f in _typeddict_fields(hint)}
        return {
            k: from_json(fields[k].hint if k in fields else typing.Any, v, depth)
            for k, v in value.items()
            if k not in fields or present(fields[k], value)
        }
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if _is_union(origin):
        members = [a for a in args if a is not type(None)]
        # A union converts only when one member is unambiguous: JSON data
        # that validated against the schema is usable as it is otherwise.
        if len(members) == 1:
            return from_json(members[0], value, depth)
        return value
    if origin in (list, collections.abc.Sequence) and isinstance(value, list):
        item = args[0] if args else typing.Any
        return [from_json(item, v, depth) for v in value]
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_json(args[0], v, depth) for v in value)
        return tuple(from_json(a, v, depth) for a, v in zip(args, value))
    if origin is dict and isinstance(value, dict):
        item = args[1] if len(args) > 1 else typing.Any
        return {k: from_json(item, v, depth) for k, v in value.items()}
    return value


def to_json(value: typing.Any, _depth: int = 0) -> typing.Any:
    """A handler's result as plain JSON data: dataclasses become objects,
    enums their values, tuples arrays. Raises `TypeError` for values with
    no JSON form."""
    if _depth > MAX_TYPE_DEPTH * 4:
        raise TypeError("the result is nested too deeply to be JSON")
    depth = _depth + 1
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return to_json(value.value, depth)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name), depth) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"a result object has the key {k!r}, but JSON object keys are strings")
            out[k] = to_json(v, depth)
        return out
    if isinstance(value, (list, tuple)):
        return [to_json(v, depth) for v in value]
    raise TypeError(f"a {type(value).__name__} has no JSON form; return dicts, lists, str, int, float, bool, None or dataclasses")
