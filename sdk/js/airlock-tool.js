/**
 * `airlock-tool`: write an Airlock tool in JavaScript as one function.
 *
 * A tool is a WebAssembly component of the `airlock:tool@0.3.0` world, built
 * with ComponentizeJS. This module is the glue: describe the arguments with
 * the schema helpers `t` (or any JSON Schema object), write the handler, and
 * `defineTool` returns the component's `metadata` and `handler` exports.
 *
 *     import { defineTool, t, ToolError } from "./airlock-tool.js";
 *
 *     export const { metadata, handler } = defineTool({
 *       name: "greet",
 *       description: "Greets a person by name.",
 *       parameters: t.object({
 *         name: t.string({ description: "Who to greet." }),
 *         excited: t.optional(t.boolean({ description: "End with an exclamation mark (default false)." })),
 *       }),
 *       output: t.object({ message: t.string() }),
 *       handler({ name, excited = false }) {
 *         if (!name.trim()) throw new ToolError("`name` is empty: pass the name of a person", "empty_name");
 *         return { message: `Hello, ${name}${excited ? "!" : "."}` };
 *       },
 *     });
 *
 * Build it with `componentize-js app.js --wit wit -n tool -d stdio random
 * clocks http fetch-event -o greet.wasm` (the WIT of the contract in `wit/`).
 *
 * Errors: a `ToolError` becomes the `tool-error` the model reads, with its
 * code; any other exception becomes a `tool-error` with code `exception`
 * naming the error, so a bug shows up as a readable failure.
 *
 * Who the call is for: the handler's second argument has `caller()`, which
 * reads the principal, the operator's attributes and roles, and the call and
 * session ids from the host (the `airlock:tool/caller` import). Nothing in
 * it comes from the model.
 *
 * Pictures, files, progress and log lines: besides its JSON result, a call
 * may attach content blocks (a PNG, a sound, an SVG file, a link) with
 * `content.attach`, report how far it has come with `progress.report`, and
 * write lines for the operator's log with `log.info` and its siblings
 * (the `content`, `progress` and `log` imports); the handler keeps its shape:
 *
 *     import { Content, content, log, progress } from "./airlock-tool.js";
 *
 *     handler({ dots }) {
 *       let circles = "";
 *       for (let i = 0; i < dots; i++) {
 *         circles += `<circle cx="${5 + i * 10}" cy="5" r="2"/>`;
 *         progress.report(i + 1, dots);
 *       }
 *       const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="10">${circles}</svg>`;
 *       content.attach(Content.embeddedText("airlock:dots.svg", "image/svg+xml", svg));
 *       log.debug(`drew ${dots} dots`);
 *       return dots;
 *     }
 *
 * A block the host refuses throws a `ToolError` with code `content_refused`
 * and the host's reason, and the call fails either way; a call that fails
 * returns no blocks. The SDK's tests stand in for the imports with module
 * hooks (`test/host-hooks.mjs`) that keep what was attached.
 *
 * Optional properties (`t.optional`) follow the rule every Airlock tool
 * follows, so that the strict converters of agent frameworks take the
 * schema as it is: `t.object` makes each one accept `null` too (`null` added
 * to its `type`, and to its `enum`; `anyOf` with `{type: "null"}` when it
 * has no single type), and a `null` there reaches the handler as a property
 * left out (so a destructuring default applies). No schema carries a
 * `default` keyword (OpenAI's strict mode refuses it): `t.object` moves one
 * into the property's description (`Default: false.`) unless that already
 * mentions its default.
 *
 * Trust: the definition is the author's; `arguments` come from the host,
 * already validated against `parameters`, but are still checked to be a
 * JSON object before the handler sees them.
 */

import { get as getCaller } from "airlock:tool/caller@0.3.0";
import { attach as attachBlock } from "airlock:tool/content@0.3.0";
import { write as writeLine } from "airlock:tool/log@0.3.0";
import { report as reportProgress } from "airlock:tool/progress@0.3.0";

/** What the host accepts as a tool name (see `wit/tool.wit`). */
const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** The code of a `tool-error` made from an exception that is not a ToolError. */
export const EXCEPTION_CODE = "exception";
/** Marks an object property as optional; removed from the schema the host reads. */
const OPTIONAL = Symbol("airlock-tool.optional");

/** A failure the tool reports on purpose. The model reads `message`: say
 * what went wrong and what would work. `code` is machine-readable, e.g. `not_found`. */
export class ToolError extends Error {
  /**
   * @param {string} message
   * @param {string} [code]
   */
  constructor(message, code) {
    super(message);
    this.name = "ToolError";
    /** @type {string | undefined} */
    this.code = code;
  }
}

/**
 * @typedef {Record<string, unknown>} JsonSchema A JSON Schema object.
 * @typedef {{ description?: string } & JsonSchema} Options Extra JSON Schema keywords.
 */

/** Keywords whose subschemas decide what a schema accepts: such a schema is
 * wrapped in `anyOf` to accept `null`. */
const COMBINATORS = ["$ref", "anyOf", "oneOf", "allOf", "not", "if", "then", "else"];
/** Keywords that only describe; they stay outside such a wrapper. */
const ANNOTATIONS = ["description", "title", "deprecated", "examples"];

/**
 * `schema`, also accepting `null`: "null" added to its `type` (and `null` to
 * its `enum`); a schema without a single type is wrapped in `anyOf` (a plain
 * `anyOf` gets a `{type: "null"}` branch). A schema that accepts anything is
 * returned as it is.
 * @param {JsonSchema} schema
 * @returns {JsonSchema}
 */
function nullable(schema) {
  const has = (key) => Object.hasOwn(schema, key);
  if (has("anyOf") && !["type", "enum", "const", ...COMBINATORS].some((k) => k !== "anyOf" && has(k))) {
    const branches = /** @type {JsonSchema[]} */ (schema.anyOf);
    return branches.some((b) => b.type === "null") ? schema : { ...schema, anyOf: [...branches, { type: "null" }] };
  }
  if (COMBINATORS.some(has)) {
    const outer = {};
    const inner = {};
    for (const [key, value] of Object.entries(schema)) (ANNOTATIONS.includes(key) ? outer : inner)[key] = value;
    return { ...outer, anyOf: [inner, { type: "null" }] };
  }
  const out = { ...schema };
  if (typeof out.type === "string" && out.type !== "null") out.type = [out.type, "null"];
  else if (Array.isArray(out.type) && !out.type.includes("null")) out.type = [...out.type, "null"];
  if (has("const")) {
    const constant = out.const;
    delete out.const;
    out.enum = constant === null ? [null] : [constant, null];
  } else if (Array.isArray(out.enum) && !out.enum.includes(null)) {
    out.enum = [...out.enum, null];
  }
  return out;
}

/**
 * `schema` without a `default` keyword; a default other than `null` is
 * restated in the description unless that already mentions its default.
 * @param {JsonSchema} schema
 * @returns {JsonSchema}
 */
function withoutDefault(schema) {
  if (!Object.hasOwn(schema, "default")) return schema;
  const { default: value, ...rest } = schema;
  const description = typeof rest.description === "string" ? rest.description : "";
  if (value === null || value === undefined || /default/i.test(description)) return rest;
  const note = `Default: ${JSON.stringify(value)}.`;
  return { ...rest, description: description ? `${description} ${note}` : note };
}

/** The JSON type every value of `values` has, or undefined. @param {unknown[]} values */
function sharedType(values) {
  const kinds = new Set(
    values.map((v) =>
      v === null ? "null" : Number.isInteger(v) ? "integer" : typeof v === "number" ? "number" : typeof v,
    ),
  );
  const [kind] = kinds;
  return kinds.size === 1 && ["string", "integer", "number", "boolean"].includes(kind) ? kind : undefined;
}

/**
 * Remove the members of `value` that are `null` where `schema` (built by
 * `t.object`) makes them optional, in nested objects and array items too:
 * such a `null` means "left out".
 * @param {JsonSchema} schema
 * @param {unknown} value
 */
function dropAbsentNulls(schema, value) {
  if (schema === null || typeof schema !== "object") return;
  const branches = Array.isArray(schema.anyOf) ? schema.anyOf : [];
  const inner = branches.length === 2 && branches[1]?.type === "null" ? branches[0] : schema;
  if (Array.isArray(value)) {
    if (inner.items && typeof inner.items === "object") for (const item of value) dropAbsentNulls(inner.items, item);
    return;
  }
  if (value === null || typeof value !== "object" || !inner.properties) return;
  const required = Array.isArray(inner.required) ? inner.required : [];
  for (const [key, member] of Object.entries(value)) {
    if (!Object.hasOwn(inner.properties, key)) continue;
    if (member === null && !required.includes(key)) delete value[key];
    else dropAbsentNulls(inner.properties[key], member);
  }
}

/** JSON Schema helpers: each returns a plain JSON Schema object. */
export const t = {
  /** @param {Options} [options] */
  string: (options = {}) => ({ type: "string", ...options }),
  /** @param {Options} [options] */
  number: (options = {}) => ({ type: "number", ...options }),
  /** @param {Options} [options] */
  integer: (options = {}) => ({ type: "integer", ...options }),
  /** @param {Options} [options] */
  boolean: (options = {}) => ({ type: "boolean", ...options }),
  /** @param {JsonSchema} items @param {Options} [options] */
  array: (items, options = {}) => ({ type: "array", items, ...options }),
  /** One of fixed values (with their `type` when they share one). @param {unknown[]} values @param {Options} [options] */
  enum: (values, options = {}) => {
    const type = sharedType(values);
    return { ...(type ? { type } : {}), enum: [...values], ...options };
  },
  /** The same schema, also accepting `null` (see `nullable`). @param {JsonSchema} schema */
  nullable: (schema) => nullable(schema),
  /** A property that may be left out of its object. @param {JsonSchema} schema */
  optional: (schema) => ({ ...schema, [OPTIONAL]: true }),
  /**
   * An object with these properties, all required unless wrapped in
   * `t.optional` (then also accepting `null`, without a `default` keyword);
   * other properties are refused (`additionalProperties: false`).
   * @param {Record<string, JsonSchema>} properties
   * @param {Options} [options]
   */
  object: (properties, options = {}) => {
    /** @type {Record<string, JsonSchema>} */
    const props = {};
    const required = [];
    for (const [key, schema] of Object.entries(properties)) {
      const { [OPTIONAL]: optional, ...plain } = schema;
      props[key] = optional ? nullable(withoutDefault(plain)) : plain;
      if (!optional) required.push(key);
    }
    const schema = { type: "object", properties: props, additionalProperties: false, ...options };
    if (required.length > 0) schema.required = required;
    return schema;
  },
};

/**
 * The caller of the call being served (the `airlock:tool/caller` import).
 * @typedef {object} Caller
 * @property {string} principal The authenticated principal, e.g. `alice`.
 * @property {Record<string, unknown>} attributes The principal's attributes from the operator's entities file, in Cedar's JSON form.
 * @property {Array<[string, string]>} parents Entities the principal is in, as [type, id].
 * @property {string} callId The front end's id of this call (empty when it gave none).
 * @property {string | undefined} sessionId The session the call runs in, if any.
 */

/** @returns {Caller} */
function currentCaller() {
  const info = getCaller();
  /** @type {Record<string, unknown>} */
  const attributes = {};
  for (const { name, value } of info.attributes) {
    // The host sends JSON text; a value that does not parse is kept as a string.
    try {
      attributes[name] = JSON.parse(value);
    } catch {
      attributes[name] = value;
    }
  }
  return {
    principal: info.principal,
    attributes,
    parents: info.parents.map((p) => [p.entityType, p.id]),
    callId: info.callId,
    sessionId: info.sessionId ?? undefined,
  };
}

/** The code of the `ToolError` that `content.attach` throws for a block the host refused. */
export const CONTENT_REFUSED = "content_refused";

/** @param {string} name @param {unknown} value @returns {string} */
function str(name, value) {
  if (typeof value !== "string") throw new TypeError(`${name} must be a string, not ${typeof value}`);
  return value;
}

/** @param {string} name @param {unknown} value @returns {string | undefined} */
function optionalStr(name, value) {
  return value === undefined || value === null ? undefined : str(name, value);
}

/** Bytes as the component model passes them. @param {string} name @param {unknown} value @returns {Uint8Array} */
function bytes(name, value) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (Array.isArray(value) && value.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) return Uint8Array.from(value);
  throw new TypeError(`${name} must be bytes (a Uint8Array, an ArrayBuffer or an array of 0-255)`);
}

/**
 * Content blocks (the `airlock:tool/content` import's `block`), to hand to
 * `content.attach`. Each is a plain value in the shape the import takes.
 */
export const Content = {
  /** Text for the model, shown after the result. @param {string} text */
  text: (text) => ({ tag: "text", val: str("text", text) }),
  /** A picture (`image/png`, `image/jpeg`, `image/gif`, `image/webp`); the host checks the bytes are of that type.
   * @param {string} mimeType @param {Uint8Array | ArrayBuffer | number[]} data */
  image: (mimeType, data) => ({ tag: "image", val: { mimeType: str("mimeType", mimeType), data: bytes("data", data) } }),
  /** A sound (`audio/wav`, `audio/mpeg`, `audio/ogg`, `audio/flac`); the host checks the bytes are of that type.
   * @param {string} mimeType @param {Uint8Array | ArrayBuffer | number[]} data */
  audio: (mimeType, data) => ({ tag: "audio", val: { mimeType: str("mimeType", mimeType), data: bytes("data", data) } }),
  /**
   * A link to a resource the client may fetch or show (the host never fetches it).
   * @param {string} uri
   * @param {string} name A short name, e.g. the file name.
   * @param {{ title?: string, description?: string, mimeType?: string, size?: number | bigint }} [details]
   */
  link: (uri, name, { title, description, mimeType, size } = {}) => {
    let length;
    if (size !== undefined && size !== null) {
      length = typeof size === "bigint" ? size : Number.isSafeInteger(size) ? BigInt(size) : -1n;
      if (length < 0n || length >= 1n << 64n) throw new TypeError("size must be a number of bytes from 0 to 2**64 - 1");
    }
    return {
      tag: "resource-link",
      val: {
        uri: str("uri", uri),
        name: str("name", name),
        title: optionalStr("title", title),
        description: optionalStr("description", description),
        mimeType: optionalStr("mimeType", mimeType),
        size: length,
      },
    };
  },
  /** An embedded text file, e.g. an SVG document. @param {string} uri @param {string} mimeType @param {string} text */
  embeddedText: (uri, mimeType, text) => ({
    tag: "embedded",
    val: { uri: str("uri", uri), mimeType: str("mimeType", mimeType), body: { tag: "text", val: str("text", text) } },
  }),
  /** An embedded binary file, e.g. a PDF. @param {string} uri @param {string} mimeType @param {Uint8Array | ArrayBuffer | number[]} data */
  embeddedBlob: (uri, mimeType, data) => ({
    tag: "embedded",
    val: { uri: str("uri", uri), mimeType: str("mimeType", mimeType), body: { tag: "blob", val: bytes("data", data) } },
  }),
};

/** The tags `Content` builds. */
const BLOCK_TAGS = ["text", "image", "audio", "resource-link", "embedded"];

/** Content blocks returned beside the call's JSON result (the `airlock:tool/content` import). */
export const content = {
  /**
   * Attach `block` (built with `Content`) to the current call's result, in
   * the order attached. Throws a `ToolError` with code `content_refused`
   * and the host's reason (a cap and its value, a media type that does not
   * match the bytes) when the host refuses it: the call then fails with
   * that reason, whatever the handler returns.
   * @param {{ tag: string, val: unknown }} block
   */
  attach(block) {
    if (block === null || typeof block !== "object" || !BLOCK_TAGS.includes(block.tag)) {
      throw new TypeError("content.attach takes a block built with Content (Content.image, Content.text, ...)");
    }
    try {
      attachBlock(block);
    } catch (e) {
      // The import's `err` arrives as the thrown value or its `payload`.
      const reason = typeof e === "string" ? e : typeof e?.payload === "string" ? e.payload : String(e?.message ?? e);
      throw new ToolError(reason, CONTENT_REFUSED);
    }
  },
};

/** How far the current call has come (the `airlock:tool/progress` import), for a client that asked to be told. */
export const progress = {
  /**
   * Report `done` (growing from one report to the next) out of `total`
   * when known, with a one-line `message` for a person. The host forwards
   * reports at most as often as the operator allows and drops one that
   * does not grow.
   * @param {number} done @param {number} [total] @param {string} [message]
   */
  report(done, total, message) {
    if (typeof done !== "number") throw new TypeError("progress must be a number");
    if (total !== undefined && total !== null && typeof total !== "number") throw new TypeError("total must be a number");
    reportProgress(done, total ?? undefined, optionalStr("message", message));
  },
};

/** How much a log line matters. */
const LEVELS = ["debug", "info", "warning", "error"];

/** Lines for the operator's log (the `airlock:tool/log` import); they reach the client only when the operator set `client_log = true` for the tool. */
export const log = {
  /** Write one line at `level` (`debug`, `info`, `warning` or `error`). @param {string} level @param {string} message */
  write(level, message) {
    if (!LEVELS.includes(level)) throw new TypeError(`level must be one of ${LEVELS.join(", ")}`);
    writeLine(level, str("message", message));
  },
  /** Write a debugging line. @param {string} message */
  debug: (message) => log.write("debug", message),
  /** Write a line the operator may want to read. @param {string} message */
  info: (message) => log.write("info", message),
  /** Write a warning. @param {string} message */
  warning: (message) => log.write("warning", message),
  /** Write an error. @param {string} message */
  error: (message) => log.write("error", message),
};

/** The error value `handler.call` throws, which becomes the `tool-error`. */
function toolErrorPayload(message, code) {
  return code === undefined || code === null ? { message: String(message) } : { message: String(message), code: String(code) };
}

/**
 * Define the tool; export the result's `metadata` and `handler`:
 * `export const { metadata, handler } = defineTool({...})`.
 *
 * @template Args
 * @param {object} definition
 * @param {string} definition.name Tool name: 1-64 letters, digits, `_` or `-`.
 * @param {string} definition.description What the tool does, written for a model.
 * @param {JsonSchema} definition.parameters JSON Schema of the arguments object (e.g. `t.object({...})`).
 * @param {JsonSchema} [definition.output] JSON Schema of the result; the host checks every result against it.
 * @param {(args: Args, context: { caller: () => Caller }) => unknown} definition.handler
 *   Returns the result (any JSON value); throws `ToolError` to fail on purpose.
 */
export function defineTool({ name, description, parameters, output, handler }) {
  if (typeof name !== "string" || !NAME_PATTERN.test(name)) {
    throw new Error(`tool name ${JSON.stringify(name)} is not accepted by the host: use 1-64 letters, digits, _ or -`);
  }
  if (typeof description !== "string" || description.trim() === "") {
    throw new Error(`tool ${name} has no description: say what it does, for a model choosing between tools`);
  }
  if (parameters === null || typeof parameters !== "object") {
    throw new Error(`tool ${name}: parameters must be a JSON Schema object, e.g. t.object({...})`);
  }
  if (typeof handler !== "function") {
    throw new Error(`tool ${name}: handler must be a function`);
  }
  const parametersText = JSON.stringify(parameters);
  const outputText = output === undefined ? undefined : JSON.stringify(output);
  const context = { caller: currentCaller };
  return {
    metadata: {
      name: () => name,
      description: () => description,
      parameters: () => parametersText,
      output: () => outputText,
    },
    handler: {
      /** @param {string} argumentsText */
      call(argumentsText) {
        let args;
        try {
          args = JSON.parse(argumentsText);
        } catch (e) {
          throw toolErrorPayload(`the arguments are not valid JSON: ${e.message}`, "invalid_arguments");
        }
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          throw toolErrorPayload("the arguments must be a JSON object", "invalid_arguments");
        }
        dropAbsentNulls(parameters, args);
        let result;
        try {
          result = handler(args, context);
          if (result !== null && typeof result === "object" && typeof result.then === "function") {
            throw new Error("the handler returned a Promise; tool handlers are synchronous");
          }
        } catch (e) {
          if (e instanceof ToolError) throw toolErrorPayload(e.message, e.code);
          const kind = e instanceof Error ? e.name : typeof e;
          const text = e instanceof Error ? e.message : String(e);
          throw toolErrorPayload(`the tool failed with ${kind}: ${text}`, EXCEPTION_CODE);
        }
        const text = JSON.stringify(result === undefined ? null : result);
        return text;
      },
    },
  };
}
