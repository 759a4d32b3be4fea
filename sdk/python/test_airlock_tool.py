"""Unit tests of the Python SDK with the host's CPython (>= 3.11): schemas
from type hints, argument conversion, results and errors. The component
side (componentize-py) is tested through the host by the example tool."""

import enum
import json
import pathlib
import sys
import types
import unittest
from dataclasses import dataclass, field
from typing import Annotated, Literal, NotRequired, Optional, TypedDict

from airlock_tool import EXCEPTION_CODE, Caller, Param, ToolError, content, export, log, progress, tool
from airlock_tool.content import Content, Link
from airlock_tool.schema import schema_of, to_json


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    """A point on the plane."""

    x: float
    y: float = 0.0


class Options(TypedDict):
    verbose: bool
    limit: NotRequired[int]


@dataclass
class Out:
    total: float
    labels: list[str] = field(default_factory=list)


class SchemaTests(unittest.TestCase):
    def test_scalars_containers_and_unions(self):
        self.assertEqual(schema_of(str), {"type": "string"})
        self.assertEqual(schema_of(bool), {"type": "boolean"})
        self.assertEqual(schema_of(list[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(schema_of(dict[str, float]), {"type": "object", "additionalProperties": {"type": "number"}})
        self.assertEqual(schema_of(Optional[str]), {"type": ["string", "null"]})
        self.assertEqual(schema_of(int | str), {"anyOf": [{"type": "integer"}, {"type": "string"}]})
        self.assertEqual(schema_of(Literal["a", "b"]), {"type": "string", "enum": ["a", "b"]})
        self.assertEqual(schema_of(Literal["a", 1]), {"enum": ["a", 1]})
        self.assertEqual(schema_of(Color), {"type": "string", "enum": ["red", "green"]})
        self.assertEqual(schema_of(Optional[Color]), {"type": ["string", "null"], "enum": ["red", "green", None]})
        self.assertEqual(
            schema_of(tuple[int, str]),
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False, "minItems": 2},
        )
        self.assertEqual(schema_of(Annotated[int, Param("How many.", minimum=1)]),
                         {"type": "integer", "minimum": 1, "description": "How many."})

    def test_dataclasses_and_typeddicts_are_closed_objects(self):
        self.assertEqual(
            schema_of(Point),
            {
                "description": "A point on the plane.",
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": ["number", "null"], "description": "Default: 0.0."}},
                "required": ["x"],
                "additionalProperties": False,
            },
        )
        options = schema_of(Options)
        self.assertEqual(options["required"], ["verbose"])
        self.assertEqual(options["properties"]["limit"], {"type": ["integer", "null"]})

    def test_types_without_a_json_form_are_refused_by_name(self):
        with self.assertRaisesRegex(TypeError, "has no JSON Schema"):
            schema_of(set[int])
        with self.assertRaisesRegex(TypeError, "keys are strings"):
            schema_of(dict[int, str])


@tool
def scale(points: list[Point], factor: Annotated[float, Param(minimum=0)] = 1.0, color: Color = Color.RED,
          options: Optional[Options] = None) -> Out:
    """Scales points.

    Multiplies every coordinate.

    Args:
        points: The points to scale.
        factor: How much, at least 0.
    """
    if factor == 0:
        raise ToolError("factor 0 makes every point the origin; pass a positive factor", code="zero")
    if factor > 100:
        return {1, 2}  # no JSON form
    if factor == 42:
        raise KeyError("boom")
    return Out(sum(p.x * factor + p.y * factor for p in points), [color.value])


@tool(name="who-am-i", description="Says who the caller is.")
def whoami(caller: Caller, shout: bool = False) -> str:
    return caller.principal.upper() if shout else caller.principal


class ToolTests(unittest.TestCase):
    def test_metadata_comes_from_the_signature_and_the_docstring(self):
        self.assertEqual(scale.name, "scale")
        self.assertEqual(scale.description, "Scales points.\n\nMultiplies every coordinate.")
        params = scale.parameters
        self.assertEqual(params["required"], ["points"])
        self.assertFalse(params["additionalProperties"])
        self.assertEqual(params["properties"]["points"]["description"], "The points to scale.")
        # Optional parameters accept null and carry no `default` keyword:
        # a default is restated in the description.
        self.assertEqual(params["properties"]["factor"], {"type": ["number", "null"], "minimum": 0, "description": "How much, at least 0. Default: 1.0."})
        self.assertEqual(params["properties"]["color"], {"type": ["string", "null"], "enum": ["red", "green", None], "description": 'Default: "red".'})
        self.assertEqual(params["properties"]["options"]["type"], ["object", "null"])
        self.assertNotIn("default", json.dumps(params))
        self.assertEqual(scale.output["required"], ["total"])

    def test_a_caller_parameter_is_not_an_argument(self):
        self.assertEqual(list(whoami.parameters["properties"]), ["shout"])
        self.assertEqual(whoami.name, "who-am-i")
        self.assertEqual(json.loads(whoami.call_json("{}")), "")

    def test_arguments_are_converted_to_the_hinted_types(self):
        out = json.loads(scale.call_json('{"points": [{"x": 1, "y": 2}, {"x": 3}], "factor": 2, "color": "green"}'))
        self.assertEqual(out, {"total": 12.0, "labels": ["green"]})

    def test_null_for_an_optional_argument_means_its_default(self):
        out = json.loads(scale.call_json('{"points": [{"x": 1, "y": null}], "factor": null, "color": null, "options": null}'))
        # y's null gave its default (0.0), each parameter's null its default.
        self.assertEqual(out, {"total": 1.0, "labels": ["red"]})

    def test_the_rule_for_optional_members_holds_for_every_shape(self):
        from airlock_tool.schema import _nullable

        self.assertEqual(_nullable({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
                         {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]})
        self.assertEqual(_nullable({"description": "D.", "allOf": [{"type": "integer"}]}),
                         {"description": "D.", "anyOf": [{"allOf": [{"type": "integer"}]}, {"type": "null"}]})
        self.assertEqual(_nullable({"const": "a"}), {"enum": ["a", None]})
        self.assertEqual(_nullable({"type": ["string", "null"]}), {"type": ["string", "null"]})
        self.assertEqual(_nullable({}), {}, "accepts anything, null included")

    def test_errors_become_tool_errors_with_codes(self):
        with self.assertRaises(ToolError) as raised:
            scale.call_json('{"points": [], "factor": 0}')
        self.assertEqual(raised.exception.code, "zero")
        with self.assertRaises(ToolError) as raised:
            scale.call_json('{"points": [], "factor": 42}')
        self.assertEqual(raised.exception.code, EXCEPTION_CODE)
        self.assertEqual(raised.exception.message, "the tool failed with KeyError: 'boom'")
        with self.assertRaises(ToolError) as raised:
            scale.call_json('{"points": [], "factor": 101}')
        self.assertIn("set has no JSON form", raised.exception.message)
        for bad, needle in [("[1]", "a JSON object"), ("{", "not valid JSON"), ('{"nope": 1, "points": []}', "unknown arguments nope"), ("{}", "points is required")]:
            with self.assertRaises(ToolError) as raised:
                scale.call_json(bad)
            self.assertEqual(raised.exception.code, "invalid_arguments")
            self.assertIn(needle, raised.exception.message)

    def test_bad_definitions_fail_at_build_time(self):
        with self.assertRaisesRegex(ValueError, "not accepted by the host"):
            tool(name="has space", description="x")(lambda: 1)
        with self.assertRaisesRegex(ValueError, "no description"):
            @tool
            def undocumented() -> int:
                return 1
        with self.assertRaisesRegex(TypeError, "no type hint"):
            @tool(description="d")
            def untyped(x):
                return x
        with self.assertRaisesRegex(TypeError, r"\*rest"):
            @tool(description="d")
            def splat(*rest: int):
                return rest

    def test_export_gives_the_component_classes(self):
        metadata, handler = export(scale)
        self.assertEqual(metadata().name(), "scale")
        self.assertEqual(json.loads(metadata().parameters()), scale.parameters)
        self.assertEqual(json.loads(handler().call('{"points": [{"x": 1}]}')), {"total": 1.0, "labels": ["red"]})
        self.assertEqual(to_json(Color.GREEN), "green")


@tool
def draw(dots: int) -> int:
    """Draws dots as an SVG file, reporting each dot."""
    circles = "".join(f'<circle cx="{5 + i * 10}" cy="5" r="2"/>' for i in range(dots))
    for i in range(dots):
        progress.report(i + 1, total=dots, message=f"dot {i + 1}")
    content.attach(Content.embedded_text("airlock:dots.svg", "image/svg+xml", f"<svg>{circles}</svg>"))
    log.debug(f"drew {dots} dots")
    return dots


class ContentProgressLogTests(unittest.TestCase):
    """Outside a component, what a tool attaches, reports and writes is kept
    for its tests, as the Rust SDK keeps it in a native build."""

    def setUp(self):
        content.take_attached(), progress.take_reports(), log.take_lines()

    def test_a_native_build_keeps_what_was_attached_in_order(self):
        content.attach(Content.text("one"))
        content.attach(Content.image("image/png", b"\x89PNG"))
        content.attach(Content.audio("audio/wav", bytearray(b"RIFF")))
        content.attach(Content.link("https://example.com/a.pdf", "a.pdf", mime_type="application/pdf", size=3))
        content.attach(Content.embedded_blob("airlock:a.bin", "application/octet-stream", b"\x00"))
        attached = content.take_attached()
        self.assertEqual([b.kind for b in attached], ["text", "image", "audio", "link", "embedded"])
        self.assertEqual(attached[0], Content("text", "one"))
        self.assertEqual(attached[1].payload, b"\x89PNG")
        self.assertEqual(attached[2].payload, b"RIFF", "a bytearray is kept as bytes")
        self.assertEqual(attached[3].payload, Link("https://example.com/a.pdf", "a.pdf", None, None, "application/pdf", 3))
        self.assertEqual((attached[4].uri, attached[4].mime_type), ("airlock:a.bin", "application/octet-stream"))
        self.assertEqual(content.take_attached(), [])

    def test_blocks_of_the_wrong_types_are_refused_when_built(self):
        with self.assertRaisesRegex(TypeError, "data must be bytes, not str"):
            Content.image("image/png", "not bytes")
        with self.assertRaisesRegex(TypeError, "mime_type must be a str"):
            Content.audio(None, b"")
        with self.assertRaisesRegex(TypeError, "size must be a number of bytes"):
            Content.link("u", "n", size=-1)
        with self.assertRaisesRegex(TypeError, "takes a Content block"):
            content.attach("text")

    def test_progress_and_log_lines_are_kept(self):
        progress.report(1, total=2, message="half")
        progress.report(2.0, 2)
        self.assertEqual(progress.take_reports(), [(1.0, 2.0, "half"), (2.0, 2.0, None)])
        log.info("one")
        log.write(log.Level.ERROR, "two")
        self.assertEqual(log.take_lines(), [(log.Level.INFO, "one"), (log.Level.ERROR, "two")])
        with self.assertRaisesRegex(TypeError, "log.Level"):
            log.write("info", "x")
        with self.assertRaisesRegex(TypeError, "progress must be a number"):
            progress.report("1")

    def test_a_tool_attaches_reports_and_logs_through_its_handler(self):
        _, handler = export(draw)
        self.assertEqual(handler().call('{"dots": 2}'), "2")
        [svg] = content.take_attached()
        self.assertEqual((svg.kind, svg.mime_type), ("embedded", "image/svg+xml"))
        self.assertEqual(svg.payload.count("<circle"), 2)
        self.assertEqual(progress.take_reports(), [(1.0, 2.0, "dot 1"), (2.0, 2.0, "dot 2")])
        self.assertEqual(log.take_lines(), [(log.Level.DEBUG, "drew 2 dots")])


class ScaffoldTests(unittest.TestCase):
    """The app `airlock new --lang python` writes (host/airlock/src/cli/scaffold/app.py.in)."""

    def test_the_python_template_is_a_working_tool(self):
        template = pathlib.Path(__file__).parents[2] / "host" / "airlock" / "src" / "cli" / "scaffold" / "app.py.in"
        module = types.ModuleType("scaffolded_app")
        exec(compile(template.read_text().replace("{{name}}", "word-count"), str(template), "exec"), module.__dict__)
        self.assertEqual(module.count.name, "word-count")
        self.assertEqual(module.count.parameters["required"], ["text"])
        self.assertEqual(json.loads(module.Handler().call('{"text": "hello wörld"}')), {"words": 2, "characters": 11})
        with self.assertRaises(ToolError) as raised:
            module.count.call_json('{"text": " "}')
        self.assertEqual(raised.exception.code, "empty_text")


if __name__ == "__main__":
    sys.exit(unittest.main())
