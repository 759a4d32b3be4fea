// The JavaScript half of `run_js`, evaluated once per interpreter before any
// submitted code. It is an expression: a function that receives the native
// `write(stream, text)` hook (stream 1 = stdout, 2 = stderr), installs the
// globals the submitted code may use (`console`, `print`, `readline`,
// `stdin`) and returns the helpers the Rust side calls around each run
// (`setStdin` before, the others after). The natives it receives are kept in
// this closure, never on `globalThis`. In a session the globals persist as
// the code left them, like any other global.
//
// The submitted code runs in the same realm and can replace any builtin the
// helpers use; the helpers therefore grab what they need up front and only
// ever shape the submitted code's own output.
(function (write) {
  'use strict';

  const MAX_DEPTH = 4;
  const MAX_ITEMS = 100;
  const MAX_STRING = 10000;

  const stringify = JSON.stringify;
  const isArray = Array.isArray;
  const objectKeys = Object.keys;
  const getPrototypeOf = Object.getPrototypeOf;
  const defineProperty = Object.defineProperty;
  const fnToString = Function.prototype.toString;
  const isView = ArrayBuffer.isView;
  const isFinite = Number.isFinite;
  const now = Date.now;

  const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

  // Text handed to the host must be valid Unicode: lone surrogates (legal
  // in JavaScript strings) become U+FFFD.
  const toWellFormed = String.prototype.toWellFormed;
  const wellFormed = (s) => toWellFormed.call(s);

  function quote(s) {
    if (s.length > MAX_STRING) {
      s = s.slice(0, MAX_STRING) + '… (' + (s.length - MAX_STRING) + ' more characters)';
    }
    const json = stringify(s);
    return "'" + json.slice(1, -1).replace(/\\"/g, '"').replace(/'/g, "\\'") + "'";
  }

  function keyText(k) {
    if (typeof k === 'symbol') return '[' + k.toString() + ']';
    return IDENT.test(k) ? k : quote(k);
  }

  function constructorName(v) {
    try {
      const proto = getPrototypeOf(v);
      if (proto === null) return '[Object: null prototype]';
      const ctor = proto.constructor;
      return typeof ctor === 'function' && typeof ctor.name === 'string' ? ctor.name : '';
    } catch {
      return '';
    }
  }

  function list(open, items, close) {
    return items.length === 0 ? open + close : open + ' ' + items.join(', ') + ' ' + close;
  }

  // A Node-like `util.inspect`: bounded in depth, items and string length so
  // that printing a huge or cyclic structure stays cheap.
  function inspect(v, depth, seen) {
    switch (typeof v) {
      case 'string':
        return quote(v);
      case 'number':
        return Object.is(v, -0) ? '-0' : String(v);
      case 'bigint':
        return String(v) + 'n';
      case 'boolean':
      case 'undefined':
        return String(v);
      case 'symbol':
        return v.toString();
      case 'function': {
        const name = typeof v.name === 'string' && v.name ? v.name : '(anonymous)';
        let source = '';
        try {
          source = fnToString.call(v);
        } catch {}
        return /^class\b/.test(source) ? '[class ' + name + ']' : '[Function: ' + name + ']';
      }
    }
    if (v === null) return 'null';
    if (seen.includes(v)) return '[Circular]';
    if (v instanceof Error) return errorText(v);
    if (v instanceof Date) return isNaN(v) ? 'Invalid Date' : v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (v instanceof Promise) return 'Promise { <unknown> }';
    if (v instanceof WeakMap || v instanceof WeakSet) return constructorName(v) + ' { <items unknown> }';
    if (depth > MAX_DEPTH) return isArray(v) ? '[Array]' : '[' + (constructorName(v) || 'Object') + ']';
    seen.push(v);
    try {
      const items = [];
      const more = (n) => {
        if (n > 0) items.push('... ' + n + ' more item' + (n === 1 ? '' : 's'));
      };
      if (isArray(v)) {
        const n = Math.min(v.length, MAX_ITEMS);
        for (let i = 0; i < n; i++) items.push(i in v ? inspect(v[i], depth + 1, seen) : '<empty>');
        more(v.length - n);
        return list('[', items, ']');
      }
      if (v instanceof Map) {
        for (const [k, x] of v) {
          if (items.length >= MAX_ITEMS) break;
          items.push(inspect(k, depth + 1, seen) + ' => ' + inspect(x, depth + 1, seen));
        }
        more(v.size - items.length);
        return list(constructorName(v) + '(' + v.size + ') {', items, '}');
      }
      if (v instanceof Set) {
        for (const x of v) {
          if (items.length >= MAX_ITEMS) break;
          items.push(inspect(x, depth + 1, seen));
        }
        more(v.size - items.length);
        return list(constructorName(v) + '(' + v.size + ') {', items, '}');
      }
      if (isView(v) && typeof v.length === 'number') {
        const n = Math.min(v.length, MAX_ITEMS);
        for (let i = 0; i < n; i++) items.push(inspect(v[i], depth + 1, seen));
        more(v.length - n);
        return list(constructorName(v) + '(' + v.length + ') [', items, ']');
      }
      if (v instanceof ArrayBuffer) return 'ArrayBuffer { byteLength: ' + v.byteLength + ' }';
      const keys = objectKeys(v);
      const n = Math.min(keys.length, MAX_ITEMS);
      for (let i = 0; i < n; i++) {
        const k = keys[i];
        items.push(keyText(k) + ': ' + inspect(v[k], depth + 1, seen));
      }
      more(keys.length - n);
      const name = constructorName(v);
      return list(name === 'Object' ? '{' : (name ? name + ' {' : '{'), items, '}');
    } catch (e) {
      return '[' + (constructorName(v) || 'Object') + ': cannot be inspected]';
    } finally {
      seen.pop();
    }
  }

  function errorText(e) {
    let head;
    try {
      head = String(e.name) + ': ' + String(e.message);
    } catch {
      head = 'Error';
    }
    let stack = '';
    try {
      stack = typeof e.stack === 'string' ? e.stack : '';
    } catch {}
    return stack ? head + '\n' + stack.replace(/\s+$/, '') : head;
  }

  function show(v) {
    try {
      return typeof v === 'string' ? v : inspect(v, 0, []);
    } catch {
      return '[value cannot be inspected]';
    }
  }

  // console.log('%s has %d items', name, n), as in browsers and Node.
  function format(args) {
    if (args.length === 0) return '';
    const first = args[0];
    let rest = 1;
    let head;
    if (typeof first === 'string' && first.includes('%')) {
      head = first.replace(/%([sdifjoOc%])/g, (m, c) => {
        if (c === '%') return '%';
        if (rest >= args.length) return m;
        const a = args[rest++];
        switch (c) {
          case 's':
            return typeof a === 'string' ? a : show(a);
          case 'd':
          case 'i': {
            if (typeof a === 'bigint') return String(a) + 'n';
            const x = Number(a);
            return String(c === 'i' ? Math.trunc(x) : x);
          }
          case 'f':
            return String(Number(a));
          case 'j':
            try {
              return stringify(a);
            } catch {
              return '[Circular]';
            }
          case 'c':
            return '';
          default:
            return show(a);
        }
      });
    } else {
      head = show(first);
    }
    const parts = [head];
    for (let i = rest; i < args.length; i++) parts.push(show(args[i]));
    return parts.join(' ');
  }

  let indent = '';
  function emit(stream, args) {
    let text = format(args);
    if (indent) text = indent + text.split('\n').join('\n' + indent);
    write(stream, wellFormed(text + '\n'));
  }

  const counts = new Map();
  const timers = new Map();
  const console = {
    log: (...a) => emit(1, a),
    info: (...a) => emit(1, a),
    debug: (...a) => emit(1, a),
    table: (...a) => emit(1, a),
    dir: (v) => emit(1, [v]),
    error: (...a) => emit(2, a),
    warn: (...a) => emit(2, a),
    trace: (...a) => {
      const stack = new Error().stack || '';
      emit(2, ['Trace: ' + format(a) + '\n' + stack.replace(/^.*\n/, '').replace(/\s+$/, '')]);
    },
    assert: (cond, ...a) => {
      if (!cond) emit(2, ['Assertion failed' + (a.length ? ': ' + format(a) : '')]);
    },
    count: (label = 'default') => {
      const n = (counts.get(label) || 0) + 1;
      counts.set(label, n);
      emit(1, [label + ': ' + n]);
    },
    countReset: (label = 'default') => counts.delete(label),
    time: (label = 'default') => timers.set(label, now()),
    timeLog: (label = 'default', ...a) => {
      const t = timers.get(label);
      if (t !== undefined) emit(1, [label + ': ' + (now() - t) + 'ms', ...a]);
    },
    timeEnd: (label = 'default') => {
      const t = timers.get(label);
      timers.delete(label);
      if (t !== undefined) emit(1, [label + ': ' + (now() - t) + 'ms']);
    },
    group: (...a) => {
      if (a.length) emit(1, a);
      indent += '  ';
    },
    groupEnd: () => {
      indent = indent.slice(2);
    },
  };

  let stdinText = '';
  let stdinPos = 0;
  function readline() {
    if (stdinPos >= stdinText.length) return null;
    let end = stdinText.indexOf('\n', stdinPos);
    if (end < 0) end = stdinText.length;
    let line = stdinText.slice(stdinPos, end);
    stdinPos = end + 1;
    if (line.endsWith('\r')) line = line.slice(0, -1);
    return line;
  }

  // Writable and configurable, like the builtins: the submitted code may
  // declare its own `print` or `stdin` without a SyntaxError.
  const globals = { console, print: (...a) => emit(1, a), readline, stdin: stdinText };
  const describeGlobal = (value) => ({ value, writable: true, configurable: true, enumerable: false });
  for (const name of objectKeys(globals)) {
    defineProperty(globalThis, name, describeGlobal(globals[name]));
  }

  // [json text or undefined, repr or undefined]: the JSON text when
  // JSON.stringify works, and a repr when the value (or something inside it)
  // has no faithful JSON form (undefined at the top level has neither).
  function toResult(v) {
    if (v === undefined) return [undefined, undefined];
    let lossy = false;
    let json;
    try {
      json = stringify(v, function (key, val) {
        switch (typeof val) {
          case 'string':
            return wellFormed(val);
          case 'bigint':
            lossy = true;
            return String(val);
          case 'number':
            if (!isFinite(val)) lossy = true;
            return val;
          case 'function':
          case 'symbol':
            lossy = true;
            return val;
        }
        if (
          val !== null &&
          typeof val === 'object' &&
          (val instanceof Map ||
            val instanceof Set ||
            val instanceof WeakMap ||
            val instanceof WeakSet ||
            val instanceof RegExp ||
            val instanceof Error ||
            val instanceof Promise ||
            val instanceof ArrayBuffer ||
            isView(val))
        ) {
          lossy = true;
        }
        return val;
      });
    } catch {
      json = undefined;
    }
    if (json === undefined) lossy = true;
    return [json, lossy ? wellFormed(inspect(v, 0, [])) : undefined];
  }

  // [name, message, stack] of a thrown value.
  function describeError(e) {
    if (e instanceof Error) {
      let name = 'Error';
      let message = '';
      let stack = '';
      try {
        name = String(e.name);
      } catch {}
      try {
        message = String(e.message);
      } catch {}
      try {
        stack = typeof e.stack === 'string' ? e.stack.replace(/\s+$/, '') : '';
      } catch {}
      return [wellFormed(name), wellFormed(message), wellFormed(stack)];
    }
    return ['Uncaught', wellFormed(show(e)), ''];
  }

  // The stdin of the next run: `readline()` starts over and the `stdin`
  // global holds it (unless earlier code in the session made `stdin`
  // unconfigurable; then only `readline()` sees it).
  function setStdin(text) {
    stdinText = text;
    stdinPos = 0;
    try {
      defineProperty(globalThis, 'stdin', describeGlobal(text));
    } catch {}
  }

  return { toResult, describeError, show: (v) => wellFormed(show(v)), setStdin };
});
