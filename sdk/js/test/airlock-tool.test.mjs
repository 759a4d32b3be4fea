// Unit tests of airlock-tool.js under Node (`node --import ./test/register.mjs
// --test test/`): the schema helpers, the exports defineTool builds, and how
// thrown errors become the `tool-error` payload. The component side is
// tested through the host by examples/js.
import assert from "node:assert/strict";
import { test } from "node:test";
import { defineTool, EXCEPTION_CODE, t, ToolError } from "../airlock-tool.js";

test("t.object makes required and optional properties and refuses others", () => {
  const schema = t.object({
    a: t.string({ description: "A." }),
    b: t.optional(t.integer({ minimum: 0 })),
    c: t.array(t.enum(["x", "y"])),
    d: t.nullable(t.number()),
  });
  assert.deepEqual(JSON.parse(JSON.stringify(schema)), {
    type: "object",
    properties: {
      a: { type: "string", description: "A." },
      b: { type: "integer", minimum: 0 },
      c: { type: "array", items: { enum: ["x", "y"] } },
      d: { anyOf: [{ type: "number" }, { type: "null" }] },
    },
    additionalProperties: false,
    required: ["a", "c", "d"],
  });
});

const tool = defineTool({
  name: "demo",
  description: "Demo.",
  parameters: t.object({ n: t.number() }),
  output: t.object({ twice: t.number() }),
  handler({ n }, { caller }) {
    if (n < 0) throw new ToolError("n is negative: pass 0 or more", "negative");
    if (n === 13) throw new RangeError("unlucky");
    if (n === 7) throw "a string";
    if (n === 99) return caller();
    return { twice: n * 2 };
  },
});

test("metadata is the definition as JSON text", () => {
  assert.equal(tool.metadata.name(), "demo");
  assert.equal(tool.metadata.description(), "Demo.");
  assert.deepEqual(JSON.parse(tool.metadata.parameters()).required, ["n"]);
  assert.deepEqual(JSON.parse(tool.metadata.output()).properties, { twice: { type: "number" } });
  const bare = defineTool({ name: "b", description: "B.", parameters: t.object({}), handler: () => null });
  assert.equal(bare.metadata.output(), undefined);
  assert.equal(bare.handler.call("{}"), "null");
});

test("the handler parses the arguments and serializes the result", () => {
  assert.equal(tool.handler.call('{"n": 2}'), '{"twice":4}');
});

test("thrown errors become tool-error payloads", () => {
  const thrown = (args) => {
    try {
      tool.handler.call(args);
    } catch (e) {
      return e;
    }
    assert.fail("no error thrown");
  };
  assert.deepEqual(thrown('{"n": -1}'), { message: "n is negative: pass 0 or more", code: "negative" });
  assert.deepEqual(thrown('{"n": 13}'), { message: "the tool failed with RangeError: unlucky", code: EXCEPTION_CODE });
  assert.deepEqual(thrown('{"n": 7}'), { message: "the tool failed with string: a string", code: EXCEPTION_CODE });
  assert.equal(thrown("[1]").code, "invalid_arguments");
  assert.equal(thrown("{").code, "invalid_arguments");
});

test("caller() reads the caller import", () => {
  assert.deepEqual(JSON.parse(tool.handler.call('{"n": 99}')), {
    principal: "alice",
    attributes: { tenant: "acme", raw: "not json" },
    parents: [["Airlock::Role", "customer"]],
    callId: "c1",
  });
});

test("bad definitions fail when the module loads", () => {
  const base = { name: "x", description: "X.", parameters: t.object({}), handler: () => 1 };
  assert.throws(() => defineTool({ ...base, name: "has space" }), /not accepted by the host/);
  assert.throws(() => defineTool({ ...base, description: " " }), /no description/);
  assert.throws(() => defineTool({ ...base, parameters: "{}" }), /JSON Schema object/);
  assert.throws(() => defineTool({ ...base, handler: undefined }), /must be a function/);
});
