"""Strict schemas: Airlock's `--strict` against what each framework sends
a model in OpenAI strict mode, for every tool Airlock serves.

Each framework converts the MCP `inputSchema` itself:

- `openai-agents`: the `FunctionTool` `MCPUtil.to_function_tool(...,
  convert_schemas_to_strict=True)` builds (what `Agent(mcp_config={
  "convert_schemas_to_strict": True})` hands the model), via
  `ensure_strict_json_schema`; a schema it cannot convert stays non-strict.
- `langchain`: `convert_to_openai_tool(tool, strict=True)` on the tool
  `load_mcp_tools` made.
- `pydantic-ai`: its OpenAI provider's JSON schema transformer runs with
  the tool's `strict` (None for MCP tools: strict only when the schema
  already is strict-compatible), and `pydantic-ai(strict=True)` the same
  transformer for a tool forced strict.

For every conversion marked strict, instances are generated from the
converted schema (every required member filled, `null` where the schema
allows it, and the "nothing" value a model must pick when it cannot send
`null`) and sent to Airlock, which validates them against the tool's own
schema. The expected table at the end holds the findings
(book/src/clients/strict-mode.md).
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass
from typing import Any

import pytest
from agents.mcp import MCPServerStdio, MCPUtil
from agents.strict_schema import ensure_strict_json_schema
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool
from mcp import ClientSession
from mcp.types import Tool as MCPTool
from pydantic_ai.providers.openai import OpenAIProvider

from conftest import BIN, BUNDLED, Setup, airlock_strict_schemas, server_env

# The transformer Pydantic AI's OpenAI provider uses for OpenAI's own models.
OpenAIJsonSchemaTransformer = OpenAIProvider.model_profile("gpt-5")["json_schema_transformer"]

FRAMEWORKS = ["airlock", "openai-agents", "langchain", "pydantic-ai", "pydantic-ai(strict=True)"]


@dataclass
class Conversion:
    """One framework's strict form of one tool's parameters."""

    strict: bool
    parameters: dict[str, Any]


@dataclass
class Converted:
    """Every tool's MCP schema, its conversions, and Airlock's verdicts."""

    mcp: dict[str, MCPTool]
    conversions: dict[str, dict[str, Conversion]]
    # (framework, tool, instance label) -> the outcome kind and text of the call.
    verdicts: dict[tuple[str, str, str], tuple[str, str]]


def convert(setup: Setup, server: MCPServerStdio, session: ClientSession, tools: list[MCPTool]) -> dict[str, dict[str, Conversion]]:
    airlock = airlock_strict_schemas(setup)
    out: dict[str, dict[str, Conversion]] = {name: {} for name in FRAMEWORKS}
    for tool in tools:
        entry = airlock[tool.name]
        out["airlock"][tool.name] = Conversion(strict=bool(entry.get("strict")), parameters=entry["parameters"])

        function_tool = MCPUtil.to_function_tool(tool, server, convert_schemas_to_strict=True)
        out["openai-agents"][tool.name] = Conversion(strict=function_tool.strict_json_schema, parameters=function_tool.params_json_schema)

        function = convert_to_openai_tool(convert_mcp_tool_to_langchain_tool(session, tool), strict=True)["function"]
        out["langchain"][tool.name] = Conversion(strict=bool(function.get("strict")), parameters=function["parameters"])

        auto = OpenAIJsonSchemaTransformer(copy.deepcopy(tool.inputSchema), strict=None)
        walked = auto.walk()  # Sets `is_strict_compatible`.
        out["pydantic-ai"][tool.name] = Conversion(strict=auto.is_strict_compatible, parameters=walked)
        forced = OpenAIJsonSchemaTransformer(copy.deepcopy(tool.inputSchema), strict=True)
        out["pydantic-ai(strict=True)"][tool.name] = Conversion(strict=True, parameters=forced.walk())
    return out


# --- instances -----------------------------------------------------------


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local `$ref` (`#/$defs/...`, `#/definitions/...`), keeping siblings."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return resolve(merged, root)


def allows_null(schema: dict[str, Any], root: dict[str, Any]) -> bool:
    schema = resolve(schema, root)
    types = schema.get("type")
    if types == "null" or (isinstance(types, list) and "null" in types):
        return True
    if None in schema.get("enum", [1]):
        return True
    return any(allows_null(branch, root) for key in ("anyOf", "oneOf") for branch in schema.get(key, []))


def value(schema: dict[str, Any], root: dict[str, Any], *, empty: bool) -> Any:
    """A non-null instance of `schema`: an ordinary value, or with `empty`
    the "nothing" value of its type ("", 0, false, [], the first constant)."""
    schema = resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key, []) if not (resolve(b, root).get("type") == "null")]
        if branches:
            return value(branches[0], root, empty=empty)
    if "const" in schema:
        return schema["const"]
    constants = [c for c in schema.get("enum", []) if c is not None]
    if constants:
        return constants[0]
    types = schema.get("type", "object" if "properties" in schema else None)
    if isinstance(types, list):
        types = next((t for t in types if t != "null"), "null")
    if types == "string":
        return "" if empty else "x" * max(1, schema.get("minLength", 1))
    if types in ("integer", "number"):
        low = schema.get("minimum", 0 if empty else 1)
        return max(low, 0 if empty else 1)
    if types == "boolean":
        return False
    if types == "array":
        return [value(schema.get("items", {}), root, empty=empty)] * schema.get("minItems", 0)
    if types == "object":
        return instance(schema, root, nulls=False, empty=empty)
    # No type (any JSON value).
    return "x"


def instance(schema: dict[str, Any], root: dict[str, Any], *, nulls: bool, empty: bool, only: set[str] | None = None) -> dict[str, Any]:
    """Every required member of an object schema: `null` where allowed (with
    `nulls`), else a value, the "nothing" value with `empty` (for the
    members in `only`, if given)."""
    schema = resolve(schema, root)
    out: dict[str, Any] = {}
    for name in schema.get("required", []):
        member = schema.get("properties", {}).get(name, {})
        if nulls and allows_null(member, root):
            out[name] = None
        else:
            out[name] = value(member, root, empty=empty and (only is None or name in only))
    return out


def instances(parameters: dict[str, Any], optional: set[str]) -> dict[str, dict[str, Any]]:
    """Labelled instances of a strict schema, without duplicates. `optional`
    names the members the tool's own schema lets a caller leave out:
    "values" fills every member, "nulls" sends `null` wherever the strict
    schema allows it, "empty" is what a model must send for an optional
    member it means to leave out when the strict schema has no `null` for
    it (the type's "nothing": "", 0, false, [], the first constant)."""
    candidates = {
        "values": instance(parameters, parameters, nulls=False, empty=False),
        "nulls": instance(parameters, parameters, nulls=True, empty=False),
        "empty": instance(parameters, parameters, nulls=True, empty=True, only=optional),
    }
    out: dict[str, dict[str, Any]] = {}
    for label, args in candidates.items():
        if args not in out.values():
            out[label] = args
    return out


def optional_members(tool: MCPTool) -> set[str]:
    return set(tool.inputSchema.get("properties", {})) - set(tool.inputSchema.get("required", []))


def current_members(tool: MCPTool) -> set[str]:
    """The optional members but the deprecated ones: the MCP schema lists
    an argument's old name (`session`, marked `deprecated`) for clients that
    check arguments against it; the provider formats, `--strict` among
    them, list the current name alone."""
    properties = tool.inputSchema.get("properties", {})
    return {name for name in optional_members(tool) if not properties[name].get("deprecated")}


# --- running them ---------------------------------------------------------


async def gather(setup: Setup) -> Converted:
    """List the tools, convert them, and send every instance of every strict
    conversion to one Airlock server."""
    server = MCPServerStdio(params={"command": str(BIN), "args": setup.serve_args(), "env": server_env()}, client_session_timeout_seconds=60)
    async with server:
        assert server.session is not None
        # The bundled tools only: the fixtures' first `attack` spins until its deadline.
        tools = [tool for tool in await server.list_tools() if tool.name in BUNDLED]
        converted_tools = {tool.name: tool for tool in tools}
        conversions = convert(setup, server, server.session, tools)
        verdicts: dict[tuple[str, str, str], tuple[str, str]] = {}
        for framework, by_tool in conversions.items():
            for name, conversion in by_tool.items():
                if not conversion.strict:
                    continue
                for label, args in instances(conversion.parameters, optional_members(converted_tools[name])).items():
                    result = await server.call_tool(name, args)
                    kind = (result.meta or {}).get("airlock/kind", "ok") if result.isError else "ok"
                    text = result.content[0].text if result.content and result.content[0].type == "text" else ""
                    verdicts[(framework, name, label)] = (kind, text)
    return Converted(mcp={t.name: t for t in tools}, conversions=conversions, verdicts=verdicts)


@pytest.fixture(scope="module")
def converted(session_setup: Setup) -> Converted:
    return asyncio.run(gather(session_setup))


def rejected(converted: Converted, framework: str) -> dict[str, str]:
    """`tool/instance` -> Airlock's message, for every instance Airlock refused."""
    return {
        f"{tool}/{label}": text.split("\n")[0]
        for (fw, tool, label), (kind, text) in sorted(converted.verdicts.items())
        if fw == framework and kind == "invalid_arguments"
    }


# --- comparing conversions -----------------------------------------------


def nodes(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every subschema with its path (through properties, definitions,
    combinators, items and additionalProperties)."""
    if not isinstance(schema, dict):
        return []
    out = [(path, schema)]
    for key, sub in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(sub, dict):
            for name, child in sub.items():
                out += nodes(child, f"{path}/{key}/{name}")
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(sub, list):
            for i, child in enumerate(sub):
                out += nodes(child, f"{path}/{key}/{i}")
        elif key in ("items", "additionalProperties") and isinstance(sub, dict):
            out += nodes(sub, f"{path}/{key}")
    return out


TYPED = ("type", "enum", "const", "anyOf", "oneOf", "$ref")


def differences(conversion: Conversion, tool: MCPTool, airlock: Conversion) -> list[str]:
    """How a framework's strict conversion of `tool` departs from Airlock's
    `--strict`, as short sentences (empty: the same treatment)."""
    out: list[str] = []
    if conversion.strict != airlock.strict:
        out.append("marked strict" if conversion.strict else "not strict")
    if not conversion.strict:
        return out
    parameters = conversion.parameters
    properties = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    for name in sorted(current_members(tool)):
        if name in required and not allows_null(properties.get(name, {}), parameters):
            out.append(f"{name}: required, null refused")
        elif name not in required:
            out.append(f"{name}: optional")
    original = dict(nodes(tool.inputSchema))
    for path, node in nodes(parameters):
        before = original.get(path, {})
        if before.get("additionalProperties") not in (None, False) and node.get("additionalProperties") is False and not node.get("properties"):
            out.append(f"{path}: open map closed (only {{}} left)")
        if path.count("/properties/") == 1 and path.startswith("/properties/") and not any(k in node for k in TYPED):
            out.append(f"{path}: no type")
    if any("default" in node for _, node in nodes(parameters)):
        out.append("`default` kept")
    return out


# --- the findings ---------------------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_instances_of_strict_schemas_pass_airlocks_validation(converted: Converted, framework: str) -> None:
    """No instance of any strict conversion is refused by Airlock's argument
    validation (other outcomes, such as a tool's own error for a made-up
    path, a denial or a declined confirmation, come after validation)."""
    assert set(BUNDLED) == set(converted.conversions[framework])
    assert any(fw == framework for fw, _, _ in converted.verdicts), f"{framework} marked no tool strict"
    assert rejected(converted, framework) == {}


def test_airlock_strict_instances_are_all_accepted_including_nulls(converted: Converted) -> None:
    """Every `--strict` schema Airlock marks strict takes `null` for each
    optional member, and Airlock accepts it."""
    for name, conversion in converted.conversions["airlock"].items():
        if conversion.strict:
            assert ("airlock", name, "nulls") in converted.verdicts or not optional_members(converted.mcp[name]), name
            nulls = instance(conversion.parameters, conversion.parameters, nulls=True, empty=False)
            assert {k for k, v in nulls.items() if v is None} == current_members(converted.mcp[name]), name


def test_every_framework_takes_airlocks_strict_schemas_as_they_are(converted: Converted) -> None:
    """Handed `airlock schema --strict` directly, each framework's converter
    keeps the schema unchanged (Agents SDK, LangChain) or finds it
    strict-compatible (Pydantic AI)."""
    for name, conversion in converted.conversions["airlock"].items():
        if not conversion.strict:
            continue
        parameters = conversion.parameters
        assert ensure_strict_json_schema(copy.deepcopy(parameters)) == parameters, name
        function = convert_to_openai_tool({"name": name, "description": "d", "parameters": copy.deepcopy(parameters)}, strict=True)["function"]
        assert function["parameters"] == parameters and function["strict"] is True, name
        transformer = OpenAIJsonSchemaTransformer(copy.deepcopy(parameters), strict=None)
        transformer.walk()
        assert transformer.is_strict_compatible, name


# How each framework's strict conversion of the MCP schemas departs from
# `--strict` (book/src/clients/strict-mode.md explains each line). Every
# optional member of a bundled tool accepts `null` by its type and no schema
# carries `default`, so the Agents SDK's conversion is Airlock's own.
# "marked strict" on json_query: `json` may be an object with arbitrary keys,
# which strict modes cannot express (Airlock leaves the tool non-strict);
# LangChain and a forced Pydantic AI mark it strict all the same. "open map
# closed": `headers` only accepts {} (or null) after LangChain's conversion,
# so a model can send no header at all; a forced Pydantic AI keeps the map
# open and marks the tool strict (Airlock leaves http_fetch non-strict).
# "not strict": Pydantic AI sends a tool strict only when its schema already
# is (every member required).
EXPECTED_DIFFERENCES: dict[str, dict[str, list[str]]] = {
    "airlock": {},
    "openai-agents": {},
    "langchain": {
        "http_fetch": ["marked strict", "/properties/headers: open map closed (only {} left)"],
        "json_query": ["marked strict"],
    },
    "pydantic-ai": {
        **{
            name: ["not strict"]
            for name in ["chart", "list_dir", "read_file", "run_js", "run_python", "search_files", "write_file"]
        },
    },
    "pydantic-ai(strict=True)": {
        "http_fetch": ["marked strict"],
        "json_query": ["marked strict"],
    },
}


def converter_problems(parameters: dict[str, Any], optional: set[str]) -> list[str]:
    """What would trip a provider in one converted schema: a `$ref` or
    `$defs` (a converter that does not follow them sends them dangling), a
    `default`, or an optional member (`optional`, from the tool's own
    schema) that does not accept `null`."""
    out = []
    for path, node in nodes(parameters):
        out += [f"{path or '/'}: `{key}`" for key in ("$ref", "$defs", "definitions", "default") if key in node]
    properties = parameters.get("properties", {})
    out += [f"{name}: optional, null refused" for name in sorted(optional) if not allows_null(properties.get(name, {}), parameters)]
    return out


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_conversion_has_no_references_no_defaults_and_nullable_optionals(converted: Converted, framework: str) -> None:
    """Each framework's conversion of every bundled tool, strict or not,
    keeps the rules the tools' schemas follow: no `$ref`/`$defs`, no
    `default`, every optional member nullable."""
    # Airlock's own conversion lists the current names alone.
    members = current_members if framework == "airlock" else optional_members
    found = {
        name: problems
        for name, conversion in sorted(converted.conversions[framework].items())
        if (problems := converter_problems(conversion.parameters, members(converted.mcp[name])))
    }
    assert found == {}
    # And the MCP schemas themselves, as every client receives them.
    assert {name: p for name, tool in converted.mcp.items() if (p := converter_problems(tool.inputSchema, optional_members(tool)))} == {}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_differences_from_airlock_strict(converted: Converted, framework: str) -> None:
    airlock = converted.conversions["airlock"]
    found = {}
    for name, conversion in sorted(converted.conversions[framework].items()):
        if lines := differences(conversion, converted.mcp[name], airlock[name]):
            found[name] = lines
    assert found == EXPECTED_DIFFERENCES[framework]
