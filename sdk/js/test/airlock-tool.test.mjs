// Unit tests of airlock-tool.js under Node (`node --import ./test/register.mjs
// --test test/`): the schema helpers, the exports defineTool builds, and how
// thrown errors become the `tool-error` payload, and what reaches the
// `content`, `progress` and `log` imports (stand-ins kept by
// test/host-hooks.mjs). The component side is tested through the host by
// examples/js.
import assert from "node:assert/strict";
import { test } from "node:test";
import { taken as attached } from "airlock:tool/content@0.3.0";
import { taken as lines } from "airlock:tool/log@0.3.0";
import { taken as reports } from "airlock:tool/progress@0.3.0";
import {
  Content,
  CONTENT_REFUSED,
  content,
  defineTool,
  EXCEPTION_CODE,
  log,
  progress,
  t,
  ToolError,
} from "../airlock-tool.js";

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

test("content.attach hands each block to the import in the import's shape", () => {
  content.attach(Content.text("one"));
  content.attach(Content.image("image/png", [0x89, 0x50]));
  content.attach(Content.audio("audio/wav", new Uint8Array([1]).buffer));
  content.attach(Content.link("https://example.com/a.pdf", "a.pdf", { mimeType: "application/pdf", size: 3 }));
  content.attach(Content.embeddedText("airlock:a.svg", "image/svg+xml", "<svg/>"));
  content.attach(Content.embeddedBlob("airlock:a.bin", "application/octet-stream", new Uint8Array([0])));
  const blocks = attached();
  assert.deepEqual(blocks.map((b) => b.tag), ["text", "image", "audio", "resource-link", "embedded", "embedded"]);
  assert.deepEqual(blocks[0], { tag: "text", val: "one" });
  assert.deepEqual(blocks[1].val, { mimeType: "image/png", data: new Uint8Array([0x89, 0x50]) });
  assert.deepEqual(blocks[2].val.data, new Uint8Array([1]));
  assert.deepEqual(blocks[3].val, {
    uri: "https://example.com/a.pdf",
    name: "a.pdf",
    title: undefined,
    description: undefined,
    mimeType: "application/pdf",
    size: 3n,
  });
  assert.deepEqual(blocks[4].val.body, { tag: "text", val: "<svg/>" });
  assert.deepEqual(blocks[5].val.body, { tag: "blob", val: new Uint8Array([0]) });
  assert.deepEqual(attached(), []);
});

test("a refused block is a ToolError with the host's reason", () => {
  assert.throws(
    () => content.attach(Content.image("image/x-refused", [1])),
    (e) => e instanceof ToolError && e.code === CONTENT_REFUSED && /not an image type/.test(e.message),
  );
  assert.throws(() => content.attach({ tag: "picture" }), /built with Content/);
  assert.throws(() => Content.image("image/png", "not bytes"), /must be bytes/);
  assert.throws(() => Content.link("u", "n", { size: -1 }), /size must be/);
});

test("progress and log lines reach their imports", () => {
  progress.report(1, 2, "half");
  progress.report(2);
  assert.deepEqual(reports(), [[1, 2, "half"], [2, undefined, undefined]]);
  log.info("one");
  log.write("error", "two");
  assert.deepEqual(lines(), [["info", "one"], ["error", "two"]]);
  assert.throws(() => log.write("loud", "x"), /level must be one of/);
  assert.throws(() => progress.report("1"), /must be a number/);
});

test("a handler attaches, reports and logs, and a refusal fails the call", () => {
  const drawing = defineTool({
    name: "draw",
    description: "Draws dots.",
    parameters: t.object({ dots: t.integer() }),
    handler({ dots }) {
      for (let i = 0; i < dots; i++) progress.report(i + 1, dots);
      content.attach(Content.embeddedText("airlock:dots.svg", "image/svg+xml", "<svg/>"));
      if (dots > 2) content.attach(Content.image("image/x-refused", [1]));
      log.debug(`drew ${dots} dots`);
      return dots;
    },
  });
  assert.equal(drawing.handler.call('{"dots": 2}'), "2");
  assert.equal(attached().length, 1);
  assert.deepEqual(reports(), [[1, 2, undefined], [2, 2, undefined]]);
  assert.deepEqual(lines(), [["debug", "drew 2 dots"]]);
  assert.throws(
    () => drawing.handler.call('{"dots": 3}'),
    (e) => e.code === CONTENT_REFUSED && /not an image type/.test(e.message),
  );
  attached();
  reports();
});
