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
      b: { type: ["integer", "null"], minimum: 0 },
      c: { type: "array", items: { type: "string", enum: ["x", "y"] } },
      d: { type: ["number", "null"] },
    },
    additionalProperties: false,
    required: ["a", "c", "d"],
  });
});

test("optional properties accept null the one way and carry no default", () => {
  const schema = t.object({
    mode: t.optional(t.enum(["overwrite", "append"], { default: "overwrite", description: "How." })),
    follow: t.optional(t.boolean({ default: true, description: "Follow (default true)." })),
    any: t.optional({ anyOf: [t.object({}), t.string()] }),
    ref: t.optional({ $ref: "#/$defs/x", description: "R." }),
  });
  assert.deepEqual(schema.properties, {
    mode: { type: ["string", "null"], enum: ["overwrite", "append", null], description: 'How. Default: "overwrite".' },
    follow: { type: ["boolean", "null"], description: "Follow (default true)." },
    any: { anyOf: [{ type: "object", properties: {}, additionalProperties: false }, { type: "string" }, { type: "null" }] },
    ref: { description: "R.", anyOf: [{ $ref: "#/$defs/x" }, { type: "null" }] },
  });
  assert.equal(JSON.stringify(schema).includes('"default"'), false);
});

test("a null for an optional property reaches the handler as left out", () => {
  const seen = [];
  const tool = defineTool({
    name: "nulls",
    description: "Nulls.",
    parameters: t.object({
      a: t.nullable(t.string()),
      b: t.optional(t.boolean()),
      inner: t.optional(t.object({ c: t.optional(t.integer()) })),
      list: t.optional(t.array(t.object({ d: t.optional(t.string()) }))),
    }),
    handler(args) {
      seen.push(args);
      const { b = "default" } = args;
      return b;
    },
  });
  assert.equal(tool.handler.call('{"a": null, "b": null, "inner": {"c": null}, "list": [{"d": null}]}'), '"default"');
  assert.deepEqual(seen[0], { a: null, inner: {}, list: [{}] }, "a required null stays");
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
