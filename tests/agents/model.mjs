// A stand-in model on loopback: a small HTTP server that speaks the
// provider's API an agent CLI is pointed at (Anthropic's Messages API for
// Claude Code through ANTHROPIC_BASE_URL, Gemini's generateContent for
// Gemini CLI through GOOGLE_GEMINI_BASE_URL), answers the agent's turns
// from a script, and keeps what the CLI handed it: the tools it offered the
// model and the tool results it sent back. So a test asserts on what a
// model would see, with no model and no network.
//
// A script is a list of steps. Each agent turn (a request that offers
// tools) runs the next step with what the CLI sent, as `{ tools, results,
// request }` (`tools`: the names offered; `results`: the tool results sent
// since the model's last answer, `{ name, text, isError }`); a step returns
// `{ call: 'echo', input: {...} }` (resolved to the CLI's name for the tool,
// e.g. `mcp__airlock__echo`) or `{ text }` (the model ends its turn). A
// step may take its time (a person approving a call on a page meanwhile).
// Requests without tools (titles, summaries, classifiers) get a short
// answer that fits the JSON schema they ask for, and are kept apart.

import http from 'node:http';

/**
 * Start a stand-in model on 127.0.0.1. Resolves to `{ url, turns, side,
 * script(steps), errors, close() }`; `turns` are the agent turns seen, each
 * `{ tools, toolDefs, results, request, answer }`.
 */
export async function startModel() {
  const model = { turns: [], side: [], errors: [], steps: [] };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      handle(model, req, body, res).catch((error) => {
        model.errors.push(`${req.method} ${req.url}: ${error.stack ?? error}`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: String(error) } }));
      });
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  model.url = `http://127.0.0.1:${port}`;
  model.script = (steps) => {
    model.steps = [...steps];
    model.turns.length = 0;
    model.side.length = 0;
    model.errors.length = 0;
  };
  model.close = () => new Promise((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });
  return model;
}

async function handle(model, req, body, res) {
  const url = new URL(req.url, 'http://model');
  const json = body ? JSON.parse(body) : {};
  if (req.method === 'POST' && url.pathname.endsWith('/messages/count_tokens')) {
    return send(res, 200, { input_tokens: 100 });
  }
  if (req.method === 'POST' && url.pathname.endsWith('/messages')) {
    return anthropic(model, json, res);
  }
  const gemini = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/.exec(url.pathname);
  if (req.method === 'POST' && gemini) {
    if (gemini[2] === 'countTokens') return send(res, 200, { totalTokens: 100 });
    return googleGenerate(model, json, res, gemini[2] === 'streamGenerateContent', gemini[1]);
  }
  model.side.push({ path: url.pathname, method: req.method });
  return send(res, 404, { error: { code: 404, message: `the stand-in model has no ${req.method} ${url.pathname}` } });
}

function send(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** Run the next step of the script for an agent turn. */
async function nextAction(model, turn) {
  model.turns.push(turn);
  const step = model.steps.shift();
  if (!step) return { text: 'The script has no more steps.' };
  try {
    const action = await step(turn);
    if (action.call) {
      const name = toolName(turn.tools, action.call);
      if (!name) throw new Error(`the CLI offered no tool for ${action.call}: ${turn.tools.join(', ')}`);
      turn.answer = { ...action, name };
    } else {
      turn.answer = action;
    }
    return turn.answer;
  } catch (error) {
    // A failed step ends the agent's turn (a 500 would make the CLI retry
    // the same request); the test reports `errors`.
    model.errors.push(`step ${model.turns.length}: ${error.stack ?? error}`);
    turn.answer = { text: `The stand-in model stopped: ${error.message ?? error}` };
    return turn.answer;
  }
}

/**
 * The CLI's name for Airlock's tool `tool`: the same name, or the name with
 * the CLI's server prefix (`mcp__airlock__echo`, `mcp_airlock_echo`,
 * `airlock__echo`).
 */
export function toolName(offered, tool) {
  return offered.find((name) => name === tool)
    ?? offered.find((name) => /airlock/.test(name) && (name.endsWith(`__${tool}`) || name.endsWith(`_${tool}`)));
}

/** A small value that fits `schema` (for side requests asking for JSON). */
function instanceOf(schema = {}) {
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[schema.enum.length - 1];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (String(type ?? '').toLowerCase()) {
    case 'object': {
      const value = {};
      for (const [key, sub] of Object.entries(schema.properties ?? {})) value[key] = instanceOf(sub);
      return value;
    }
    case 'array': return [];
    case 'number': case 'integer': return schema.minimum ?? 1;
    case 'boolean': return false;
    default: return 'ok';
  }
}

// -- Anthropic Messages API ----------------------------------------------------

/** The text of a tool_result block's content. */
function anthropicText(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
}

async function anthropic(model, request, res) {
  const tools = (request.tools ?? []).filter((tool) => tool.name);
  let answer;
  if (tools.length === 0) {
    model.side.push({ api: 'anthropic', request });
    answer = { text: 'ok' };
  } else {
    const messages = request.messages ?? [];
    // The tool results follow the model's last answer (Claude Code may add
    // a reminder of its own after them).
    const since = messages.slice(messages.findLastIndex((message) => message.role === 'assistant') + 1);
    const uses = new Map();
    for (const message of messages) {
      for (const block of Array.isArray(message.content) ? message.content : []) {
        if (block.type === 'tool_use') uses.set(block.id, block.name);
      }
    }
    const results = since.flatMap((message) => (Array.isArray(message.content) ? message.content : []))
      .filter((block) => block.type === 'tool_result')
      .map((block) => ({ name: uses.get(block.tool_use_id), text: anthropicText(block.content), isError: block.is_error === true }));
    answer = await nextAction(model, {
      tools: tools.map((tool) => tool.name),
      toolDefs: tools,
      results,
      request,
    });
  }
  const content = answer.call
    ? [{ type: 'tool_use', id: `toolu_${model.turns.length}_${Date.now()}`, name: answer.name, input: answer.input ?? {} }]
    : [{ type: 'text', text: answer.text }];
  const message = {
    id: `msg_${Date.now()}`,
    type: 'message',
    role: 'assistant',
    model: request.model ?? 'stand-in',
    content,
    stop_reason: answer.call ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 100, output_tokens: 10 },
  };
  if (!request.stream) return send(res, 200, message);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', { message: { ...message, content: [], stop_reason: null } });
  content.forEach((block, index) => {
    if (block.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    } else {
      event('content_block_start', { index, content_block: { ...block, input: {} } });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: 10 } });
  event('message_stop', {});
  res.end();
}

// -- Gemini generateContent ------------------------------------------------------

/** The text a functionResponse carries (Gemini CLI wraps results as `{output}` or `{error}`). */
function geminiText(response) {
  const value = response?.response ?? response;
  if (typeof value === 'string') return value;
  if (typeof value?.output === 'string') return value.output;
  if (typeof value?.error === 'string') return value.error;
  if (typeof value?.content === 'string') return value.content;
  return JSON.stringify(value);
}

async function googleGenerate(model, request, res, stream, modelName) {
  const declarations = (request.tools ?? []).flatMap((tool) => tool.functionDeclarations ?? []);
  const schema = request.generationConfig?.responseJsonSchema ?? request.generationConfig?.responseSchema;
  let answer;
  if (declarations.length === 0) {
    model.side.push({ api: 'gemini', model: modelName, request });
    answer = { text: schema ? JSON.stringify(instanceOf(schema)) : 'ok' };
  } else {
    const contents = request.contents ?? [];
    const since = contents.slice(contents.findLastIndex((content) => content.role === 'model') + 1);
    const results = since.flatMap((content) => content.parts ?? [])
      .filter((part) => part.functionResponse)
      .map(({ functionResponse }) => ({
        name: functionResponse.name,
        text: geminiText(functionResponse.response),
        isError: functionResponse.response?.error !== undefined,
        response: functionResponse.response,
      }));
    answer = await nextAction(model, {
      tools: declarations.map((declaration) => declaration.name),
      toolDefs: declarations,
      results,
      request,
    });
  }
  const parts = answer.call
    ? [{ functionCall: { name: answer.name, args: answer.input ?? {} } }]
    : [{ text: answer.text }];
  const response = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 10, totalTokenCount: 110 },
    modelVersion: modelName,
  };
  if (!stream) return send(res, 200, response);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(`data: ${JSON.stringify(response)}\r\n\r\n`);
  res.end();
}
