// Module hooks for testing airlock-tool.js under Node: the component's
// `airlock:tool/caller@0.3.0` import resolves to a stand-in module whose
// `get` returns a fixed caller, as the host would.
const SPECIFIER = "airlock:tool/caller@0.3.0";
const STAND_IN = `export function get() {
  return {
    principal: "alice",
    attributes: [{ name: "tenant", value: '"acme"' }, { name: "raw", value: "not json" }],
    parents: [{ entityType: "Airlock::Role", id: "customer" }],
    callId: "c1",
    sessionId: undefined,
  };
}`;

export async function resolve(specifier, context, next) {
  if (specifier === SPECIFIER) return { url: "airlock-test:caller", shortCircuit: true };
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url === "airlock-test:caller") return { format: "module", source: STAND_IN, shortCircuit: true };
  return next(url, context);
}
