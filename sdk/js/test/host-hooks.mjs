// Module hooks for testing airlock-tool.js under Node: the component's
// imports (`airlock:tool/caller`, `content`, `progress` and `log`, version
// 0.3.0) resolve to stand-in modules, as the host would answer them. The
// caller is fixed; what is attached, reported and written is kept, and each
// stand-in's `taken()` hands it to the test and forgets it. A block whose
// media type is `image/x-refused` is refused the way a component sees a
// refusal: thrown, with the host's reason as its `payload`.
const STAND_INS = {
  "airlock:tool/caller@0.3.0": `export function get() {
    return {
      principal: "alice",
      attributes: [{ name: "tenant", value: '"acme"' }, { name: "raw", value: "not json" }],
      parents: [{ entityType: "Airlock::Role", id: "customer" }],
      callId: "c1",
      sessionId: undefined,
    };
  }`,
  "airlock:tool/content@0.3.0": `const kept = [];
  export function attach(block) {
    if (block.val?.mimeType === "image/x-refused") {
      throw Object.assign(new Error("refused"), { payload: "image/x-refused is not an image type the host accepts" });
    }
    kept.push(block);
  }
  export function taken() { return kept.splice(0); }`,
  "airlock:tool/progress@0.3.0": `const kept = [];
  export function report(progress, total, message) { kept.push([progress, total, message]); }
  export function taken() { return kept.splice(0); }`,
  "airlock:tool/log@0.3.0": `const kept = [];
  export function write(level, message) { kept.push([level, message]); }
  export function taken() { return kept.splice(0); }`,
};

export async function resolve(specifier, context, next) {
  if (Object.hasOwn(STAND_INS, specifier)) return { url: `airlock-test:${specifier}`, shortCircuit: true };
  return next(specifier, context);
}

export async function load(url, context, next) {
  const specifier = url.startsWith("airlock-test:") ? url.slice("airlock-test:".length) : undefined;
  if (specifier !== undefined && Object.hasOwn(STAND_INS, specifier)) {
    return { format: "module", source: STAND_INS[specifier], shortCircuit: true };
  }
  return next(url, context);
}
