//! `run_js`: runs a JavaScript snippet in QuickJS-NG (via `rquickjs`) and
//! returns what it printed and the value of its last expression.
//!
//! # Trust
//!
//! The `code` comes from a model and is hostile by assumption. It runs in
//! the component instance's QuickJS runtime (fresh unless the host keeps the
//! instance for a session) with a heap cap ([`MEMORY_LIMIT_BYTES`]),
//! so that a memory bomb becomes an ordinary `error` in the result
//! (`InternalError: out of memory`) rather than a trap of the component. The
//! engine gets no `std`/`os` modules and no module loader: the only ways out
//! of the interpreter are the capped `console` capture and the returned
//! result. Wall-clock time and fuel are the host's business (epoch deadline,
//! fuel budget); this crate adds no timer.
//!
//! Deep recursion is the one limit that ends as a trap: QuickJS-NG compiles
//! its stack check out on WASI (`update_stack_limit` in `quickjs.c` sets no
//! limit under `__wasi__`), so [`MAX_STACK_BYTES`] only holds in native
//! builds. In the component, recursion deeper than about 1,400 JavaScript
//! frames overflows the host's 1 MiB wasm stack (`Trap::StackOverflow`); the
//! 1 MiB shadow stack in linear memory lasts about 4,000 frames, so the
//! wasm stack is the one to run out unless the host raises it past ~3 MiB.
//!
//! Everything that crosses back to the host is capped by a named constant:
//! [`MAX_STREAM_BYTES`] per stream, [`MAX_RESULT_BYTES`] for the result and
//! [`MAX_ERROR_BYTES`] for each error field.

mod capture;
mod show;

use airlock_guest::ToolError;
use capture::{Capture, truncate};
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Array, Context, Ctx, Function, Module, Object, Persistent, Runtime, Value};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::rc::Rc;

/// Largest `code` accepted, in bytes.
pub const MAX_CODE_BYTES: usize = 1 << 20;
/// Largest `stdin` accepted, in bytes.
pub const MAX_STDIN_BYTES: usize = 1 << 20;
/// Bytes kept of each of stdout and stderr; the rest is cut with a note.
/// Both streams and the result together stay under the host's default 1 MiB
/// output cap.
pub const MAX_STREAM_BYTES: usize = 256 << 10;
/// Largest JSON text of `result` (and of `result_repr`) returned.
pub const MAX_RESULT_BYTES: usize = 256 << 10;
/// Largest `error.message` and `error.stack` returned.
pub const MAX_ERROR_BYTES: usize = 64 << 10;
/// Heap cap of the JavaScript runtime. Allocations past it throw
/// `InternalError: out of memory` inside the script. It sits well under the
/// host's default 128 MiB linear-memory cap so that the interpreter, not the
/// host, is the one to say no.
pub const MEMORY_LIMIT_BYTES: usize = 64 << 20;
/// Extra heap allowed after the script has finished, to describe its result
/// or its out-of-memory error.
const REPORT_HEADROOM_BYTES: usize = 8 << 20;
/// Stack cap of the JavaScript runtime in native builds (the unit tests):
/// deeper recursion throws `RangeError: Maximum call stack size exceeded`.
/// QuickJS-NG ignores it on WASI (see the crate documentation).
pub const MAX_STACK_BYTES: usize = 256 << 10;

/// Name the submitted code has in stack traces.
const CODE_FILENAME: &str = "<code>";
/// The JavaScript half of the tool (`src/prelude.js`: console capture and
/// result shaping) as QuickJS bytecode of a module whose default export is
/// the prelude function, compiled by `build.rs`: loading it is much cheaper
/// than parsing the source in every fresh instance.
static PRELUDE_BYTECODE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/prelude.qjsbc"));

/// What the model reads to decide when and how to call `run_js`. At most
/// 1024 characters (some clients refuse longer descriptions): the detail is
/// in the parameters' descriptions.
pub const DESCRIPTION: &str = "\
Runs JavaScript (ES2023, QuickJS-NG engine) in an isolated sandbox and returns what it printed \
and the value of its last expression. Plain JavaScript, not Node.js or a browser: no \
require/import, process, fs, fetch, setTimeout/setInterval or Intl, no filesystem or network. \
console.log/info/debug and print(...) write to `stdout`; console.error/warn write to `stderr` (each \
capped at 256 KiB). The last expression's value is returned as `result` in JSON form, or as \
`result_repr` when it has none; top-level await works. An uncaught exception is returned in `error` \
(name, message, stack with line:column in your code). show(data, mimeType) returns bytes the code \
made (a PNG Uint8Array, an SVG string) to the user. \
Limits: a 64 MiB heap and a time budget set by the operator \
(a few seconds by default). Running out of time, or recursing deeper than about 1,000 calls, aborts \
the call with a tool error and no output, so keep loops bounded. `stdin` and `session_id` are \
described with the parameters.";

/// Arguments of `run_js`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// JavaScript source, run as a classic script (top-level `await` allowed).
    /// The value of its last expression statement (e.g. a final `x` or
    /// `JSON.parse(s)`) is returned as `result`; when it has no faithful
    /// JSON form (undefined, functions, Map/Set, BigInt, NaN, cycles)
    /// `result_repr` holds a readable rendering. A Promise left as the last
    /// value is awaited. Allocating past the 64 MiB heap throws
    /// `InternalError: out of memory`. `show(data, mimeType)` returns bytes
    /// the code made to the user beside the result: image/png, image/jpeg,
    /// image/gif or image/webp (a Uint8Array or ArrayBuffer) as a picture,
    /// audio/wav, audio/mpeg, audio/ogg or audio/flac as a sound, any other
    /// type (e.g. image/svg+xml, data a string) as a file; at most 16 per
    /// call, each checked and capped by the host, which fails the call if
    /// it refuses one.
    #[schemars(length(max = MAX_CODE_BYTES))]
    pub code: String,
    /// Text the code can read as the global string `stdin` and line by
    /// line through `readline()` (null at the end). Empty when omitted.
    #[serde(default)]
    #[schemars(length(max = MAX_STDIN_BYTES))]
    pub stdin: Option<String>,
    /// Optional session id (1-64 characters: letters, digits, `_`, `-`,
    /// `.`). Calls with the same id continue in the same interpreter, so
    /// globals, functions and `var`/`let`/`const` bindings from earlier calls
    /// are still defined. The state lives only inside that session: it is
    /// lost when the session sits idle too long, when a call times out, runs
    /// out of memory or crashes (the result then says the session was reset),
    /// and it is never visible to other sessions. Omit it for a fresh
    /// interpreter: without a session nothing persists between calls.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// Result of `run_js`.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct RunOutput {
    /// What console.log/info/debug and print wrote (capped).
    pub stdout: String,
    /// What console.error/warn wrote (capped).
    pub stderr: String,
    /// The value of the last expression as JSON, or null (no value, an
    /// error, or no JSON form).
    pub result: serde_json::Value,
    /// A readable rendering of the last value when it has no faithful JSON
    /// form (or its JSON was too large).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_repr: Option<String>,
    /// The uncaught exception, if the code threw one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<JsError>,
}

/// An uncaught exception.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct JsError {
    /// The error's `name` (`TypeError`, `RangeError`, …), or `Uncaught` when
    /// a non-Error value was thrown.
    pub name: String,
    /// The error's `message`, or a rendering of the thrown value.
    pub message: String,
    /// The stack trace (`at f (<code>:3:9)` lines), possibly empty.
    pub stack: String,
}

/// The two capture streams, shared with the `write` hook.
#[derive(Debug)]
struct Streams {
    stdout: Capture,
    stderr: Capture,
}

/// Promises rejected with no handler yet: (promise, reason).
type Rejections = Rc<RefCell<Vec<(Persistent<Value<'static>>, Persistent<Value<'static>>)>>>;

/// How the script ended, kept alive between the run and the report phases.
struct Ending {
    /// The final value, or the thrown value.
    outcome: Result<Persistent<Value<'static>>, Persistent<Value<'static>>>,
    /// Promises whose rejection is already reported as `outcome`.
    awaited: Vec<Persistent<Value<'static>>>,
    /// The helpers returned by the prelude.
    helpers: Persistent<Object<'static>>,
}

/// The error for a `session_id` argument that reached the interpreter: the
/// host consumes `session_id` when it keeps sessions for this tool, so
/// seeing it here means the operator has not enabled them.
const SESSIONS_DISABLED: &str = "this host runs every run_js call in a fresh interpreter (the operator has \
     not enabled sessions for this tool): omit `session_id` and put everything a call needs in its `code`";

/// A JavaScript runtime and its global context. The globals the submitted
/// code defines live as long as the interpreter: the component keeps one per
/// instance (see [`run_js_in_instance`]), so they persist exactly as long as
/// the host keeps the instance (a session) and no longer.
///
/// An interpreter is never torn down: dropping it leaks the JavaScript heap
/// (`ManuallyDrop`). The component instance is discarded instead, which is
/// cheaper, and QuickJS asserts that no value (a kept helper, a tracked
/// rejection) outlives its runtime.
pub struct Interpreter {
    runtime: ManuallyDrop<Runtime>,
    context: ManuallyDrop<Context>,
    rejections: ManuallyDrop<Rejections>,
    /// Where the installed `console`/`print` write; emptied by every run.
    streams: Rc<RefCell<Streams>>,
    /// The helpers the prelude returned when it was installed.
    helpers: ManuallyDrop<Persistent<Object<'static>>>,
    /// How many blocks `show` attached in the current run.
    shown: Rc<std::cell::Cell<usize>>,
}

impl Interpreter {
    /// A fresh runtime with the heap and stack caps, and an empty context.
    ///
    /// # Errors
    ///
    /// QuickJS could not allocate the runtime or context.
    pub fn new() -> Result<Self, ToolError> {
        let runtime = Runtime::new().map_err(internal)?;
        runtime.set_max_stack_size(MAX_STACK_BYTES);
        let rejections: Rejections = Rc::default();
        let tracked = rejections.clone();
        runtime.set_host_promise_rejection_tracker(Some(Box::new(move |ctx, promise, reason, is_handled| {
            let mut list = tracked.borrow_mut();
            if is_handled {
                list.retain(|(p, _)| p.clone().restore(&ctx).map_or(true, |p| p != promise));
            } else {
                list.push((Persistent::save(&ctx, promise), Persistent::save(&ctx, reason)));
            }
        })));
        let context = Context::full(&runtime).map_err(internal)?;
        runtime.set_memory_limit(MEMORY_LIMIT_BYTES);
        let streams = Rc::new(RefCell::new(Streams { stdout: Capture::new(0), stderr: Capture::new(0) }));
        // The prelude runs before any submitted code, so the builtins its
        // helpers keep are the original ones even when a session's code
        // replaces them later.
        let helpers = context.with(|ctx| install(&ctx, &streams))?;
        let shown = Rc::new(std::cell::Cell::new(0));
        context.with(|ctx| show::install(&ctx, &shown))?;
        Ok(Self {
            runtime: ManuallyDrop::new(runtime),
            context: ManuallyDrop::new(context),
            rejections: ManuallyDrop::new(rejections),
            streams,
            helpers: ManuallyDrop::new(helpers),
            shown,
        })
    }

    /// Run the code in this interpreter's context and describe what
    /// happened. Globals of earlier runs are still defined.
    ///
    /// # Errors
    ///
    /// Only for oversized arguments and interpreter failures: an exception
    /// thrown by the code is an ordinary result with `error` set.
    pub fn run(&self, args: Args) -> Result<RunOutput, ToolError> {
        if args.code.len() > MAX_CODE_BYTES {
            return Err(ToolError::with_code(
                "code_too_large",
                format!("`code` is {} bytes; the limit is {MAX_CODE_BYTES} bytes", args.code.len()),
            ));
        }
        let stdin = args.stdin.unwrap_or_default();
        if stdin.len() > MAX_STDIN_BYTES {
            return Err(ToolError::with_code(
                "stdin_too_large",
                format!("`stdin` is {} bytes; the limit is {MAX_STDIN_BYTES} bytes", stdin.len()),
            ));
        }
        // A rejection left from an earlier run was reported then.
        self.rejections.borrow_mut().clear();
        // `show`'s cap counts this run's blocks, also in a session.
        self.shown.set(0);
        self.runtime.set_memory_limit(MEMORY_LIMIT_BYTES);
        *self.streams.borrow_mut() =
            Streams { stdout: Capture::new(MAX_STREAM_BYTES), stderr: Capture::new(MAX_STREAM_BYTES) };
        let streams = &self.streams;

        let ending = self.context.with(|ctx| execute(&ctx, &args.code, &stdin, &self.helpers));
        match ending {
            Ok(ending) => {
                // The script may have stopped on the heap cap; describing
                // that (or a large result) needs a little room of its own.
                self.runtime.set_memory_limit(MEMORY_LIMIT_BYTES + REPORT_HEADROOM_BYTES);
                self.context.with(|ctx| report(&ctx, ending, &self.rejections, streams))
            }
            Err(err) => Err(err),
        }
    }
}

/// Run the code in a fresh interpreter and describe what happened.
///
/// # Errors
///
/// Only for oversized arguments and interpreter set-up failures: an
/// exception thrown by the code is an ordinary result with `error` set.
pub fn run_js(args: Args) -> Result<RunOutput, ToolError> {
    Interpreter::new()?.run(args)
}

thread_local! {
    /// The interpreter of this component instance, created by the first call.
    static INSTANCE: RefCell<Option<Interpreter>> = const { RefCell::new(None) };
}

/// The tool's handler: run the code in this instance's interpreter. The host
/// gives every call a fresh instance unless the call belongs to a session,
/// so globals persist within a session and nowhere else.
///
/// # Errors
///
/// As [`Interpreter::run`]; also when a `session_id` argument arrives (the host
/// keeps sessions by consuming it, so it only gets here when sessions are
/// off for this tool).
pub fn run_js_in_instance(args: Args) -> Result<RunOutput, ToolError> {
    if args.session_id.is_some() {
        return Err(ToolError::with_code("sessions_disabled", SESSIONS_DISABLED));
    }
    INSTANCE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let interpreter = match slot.take() {
            Some(interpreter) => interpreter,
            None => Interpreter::new()?,
        };
        let output = interpreter.run(args);
        *slot = Some(interpreter);
        output
    })
}

/// Evaluate the prelude once for a context: it installs the globals the code
/// may use, writing through `streams`, and returns the helpers.
fn install(ctx: &Ctx<'_>, streams: &Rc<RefCell<Streams>>) -> Result<Persistent<Object<'static>>, ToolError> {
    // SAFETY: the bytes are the bytecode `build.rs` wrote with this crate's
    // exact QuickJS version; they are static, as the ROM-data flag of
    // `Module::load` requires, and never come from the submitted code.
    let module =
        unsafe { Module::load(ctx.clone(), PRELUDE_BYTECODE) }.map_err(|err| internal(describe_setup(ctx, err)))?;
    let (module, _evaluated) = module.eval().map_err(|err| internal(describe_setup(ctx, err)))?;
    let prelude: Function = module.get("default").map_err(|err| internal(describe_setup(ctx, err)))?;
    let sink = streams.clone();
    let write = Function::new(ctx.clone(), move |stream: i32, text: String| {
        let mut streams = sink.borrow_mut();
        let capture = if stream == 2 { &mut streams.stderr } else { &mut streams.stdout };
        capture.push(&text);
    })
    .map_err(internal)?;
    let helpers: Object = prelude.call((write,)).map_err(|err| internal(describe_setup(ctx, err)))?;
    Ok(Persistent::save(ctx, helpers))
}

/// Hand this run's stdin to the prelude, run the code and drive its promises
/// to the end.
fn execute(ctx: &Ctx<'_>, code: &str, stdin: &str, helpers: &Persistent<Object<'static>>) -> Result<Ending, ToolError> {
    let set_stdin: Function = helpers
        .clone()
        .restore(ctx)
        .and_then(|h| h.get("setStdin"))
        .map_err(|err| internal(describe_setup(ctx, err)))?;
    set_stdin.call::<_, ()>((stdin,)).map_err(|err| internal(describe_setup(ctx, err)))?;
    let helpers = helpers.clone();

    // `promise: true` evaluates the script as an async global script: it
    // returns a promise of `{ value: <completion value> }`, which is what
    // makes top-level await work.
    let evaluated = ctx.eval_with_options::<Value, _>(code, options(CODE_FILENAME, true));
    let mut awaited = Vec::new();
    let outcome = match evaluated {
        Err(_) => Err(ctx.catch()),
        Ok(value) => {
            drain_jobs(ctx);
            match settle(ctx, value.clone()) {
                Err(thrown) => {
                    awaited.push(Persistent::save(ctx, value));
                    Err(thrown)
                }
                Ok(completion) => {
                    let last = match completion.as_object() {
                        Some(object) => {
                            object.get::<_, Value>("value").unwrap_or_else(|_| Value::new_undefined(ctx.clone()))
                        }
                        None => completion,
                    };
                    if last.is_promise() {
                        awaited.push(Persistent::save(ctx, last.clone()));
                        settle(ctx, last)
                    } else {
                        Ok(last)
                    }
                }
            }
        }
    };
    Ok(Ending {
        outcome: outcome.map(|v| Persistent::save(ctx, v)).map_err(|v| Persistent::save(ctx, v)),
        awaited,
        helpers,
    })
}

/// Eval options for a classic global script.
fn options(filename: &str, promise: bool) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.backtrace_barrier = true;
    options.promise = promise;
    options.filename = Some(filename.to_owned());
    options
}

/// Run queued promise jobs until none is left. A job that never stops
/// queueing more runs into the host's deadline like any other endless loop.
fn drain_jobs(ctx: &Ctx<'_>) {
    while ctx.execute_pending_job() {}
}

/// The value of a settled promise (or of a plain value), or what it was
/// rejected with. A promise still pending once no job is left can never
/// settle: there are no timers or I/O to wake it.
fn settle<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Result<Value<'js>, Value<'js>> {
    let Some(promise) = value.as_promise().cloned() else {
        return Ok(value);
    };
    drain_jobs(ctx);
    match promise.state() {
        PromiseState::Resolved => match promise.result::<Value>() {
            Some(Ok(v)) => Ok(v),
            _ => Err(ctx.catch()),
        },
        PromiseState::Rejected => {
            let _ = promise.result::<Value>();
            Err(ctx.catch())
        }
        PromiseState::Pending => Err(rquickjs::Exception::from_message(
            ctx.clone(),
            "the final promise never settled: no job was left to run (there are no timers or I/O \
             to resolve it)",
        )
        .map(|e| e.into_value())
        .unwrap_or_else(|_| Value::new_undefined(ctx.clone()))),
    }
}

/// Shape the outcome into the tool's result.
fn report(
    ctx: &Ctx<'_>,
    ending: Ending,
    rejections: &Rejections,
    streams: &Rc<RefCell<Streams>>,
) -> Result<RunOutput, ToolError> {
    let helpers = ending.helpers.restore(ctx).map_err(internal)?;
    let show: Option<Function> = helpers.get("show").ok();

    // Rejections nobody handled, other than the one reported as `error`,
    // are printed to stderr as engines do ("Uncaught (in promise)").
    let awaited: Vec<Value> = ending.awaited.into_iter().filter_map(|p| p.restore(ctx).ok()).collect();
    for (promise, reason) in rejections.borrow_mut().drain(..) {
        let (Ok(promise), Ok(reason)) = (promise.restore(ctx), reason.restore(ctx)) else { continue };
        if awaited.contains(&promise) {
            continue;
        }
        let text = show
            .as_ref()
            .and_then(|f| f.call::<_, String>((reason,)).ok())
            .unwrap_or_else(|| "(the reason cannot be shown)".to_owned());
        streams.borrow_mut().stderr.push(&format!("Uncaught (in promise) {text}\n"));
    }

    let mut output = RunOutput {
        stdout: String::new(),
        stderr: String::new(),
        result: serde_json::Value::Null,
        result_repr: None,
        error: None,
    };
    match ending.outcome {
        Ok(value) => {
            let value = value.restore(ctx).map_err(internal)?;
            let (result, repr) = shape_result(ctx, &helpers, value);
            output.result = result;
            output.result_repr = repr;
        }
        Err(thrown) => {
            let thrown = thrown.restore(ctx).map_err(internal)?;
            output.error = Some(shape_error(ctx, &helpers, thrown));
        }
    }
    // The `write` hook still holds a reference to the streams: take the
    // captures out through the shared cell.
    let mut streams = streams.borrow_mut();
    let stdout = std::mem::replace(&mut streams.stdout, Capture::new(0));
    let stderr = std::mem::replace(&mut streams.stderr, Capture::new(0));
    output.stdout = stdout.finish();
    output.stderr = stderr.finish();
    Ok(output)
}

/// `(result, result_repr)` of the final value.
fn shape_result<'js>(ctx: &Ctx<'js>, helpers: &Object<'js>, value: Value<'js>) -> (serde_json::Value, Option<String>) {
    let shaped = helpers
        .get::<_, Function>("toResult")
        .and_then(|f| f.call::<_, Array>((value,)))
        .and_then(|pair| Ok((pair.get::<Option<String>>(0)?, pair.get::<Option<String>>(1)?)));
    let (json, repr) = match shaped {
        Ok(pair) => pair,
        Err(_) => {
            let _ = ctx.catch();
            return (serde_json::Value::Null, Some("(the value cannot be shown)".to_owned()));
        }
    };
    let repr = repr.map(|r| truncate(r, MAX_RESULT_BYTES));
    match json {
        None => (serde_json::Value::Null, repr),
        Some(json) if json.len() > MAX_RESULT_BYTES => {
            (serde_json::Value::Null, Some(truncate(json, MAX_RESULT_BYTES)))
        }
        Some(json) => match serde_json::from_str(&json) {
            Ok(result) => (result, repr),
            // Deeper than serde_json's recursion limit: hand back the text.
            Err(_) => (serde_json::Value::Null, Some(repr.unwrap_or(json))),
        },
    }
}

/// `error` of a thrown value.
fn shape_error<'js>(ctx: &Ctx<'js>, helpers: &Object<'js>, thrown: Value<'js>) -> JsError {
    let described = helpers
        .get::<_, Function>("describeError")
        .and_then(|f| f.call::<_, Array>((thrown,)))
        .and_then(|triple| Ok((triple.get::<String>(0)?, triple.get::<String>(1)?, triple.get::<String>(2)?)));
    match described {
        Ok((name, message, stack)) => JsError {
            name: truncate(name, 256),
            message: truncate(message, MAX_ERROR_BYTES),
            stack: truncate(stack, MAX_ERROR_BYTES),
        },
        Err(_) => {
            let _ = ctx.catch();
            JsError {
                name: "InternalError".to_owned(),
                message: "the code failed and its error could not be described (likely out of memory)".to_owned(),
                stack: String::new(),
            }
        }
    }
}

/// The message of an exception thrown while setting up (a bug of this tool).
fn describe_setup(ctx: &Ctx<'_>, err: rquickjs::Error) -> String {
    if err.is_exception() {
        let thrown = ctx.catch();
        if let Some(exception) = thrown.as_exception() {
            return format!("{:?}: {:?}", exception.message(), exception.stack());
        }
    }
    err.to_string()
}

/// A failure of the interpreter itself, not of the submitted code.
fn internal(err: impl std::fmt::Display) -> ToolError {
    ToolError::with_code("internal", format!("the JavaScript interpreter failed: {err}"))
}

// Exported only when built as a component: a native `cdylib` cannot carry
// export names such as `airlock:tool/handler@0.1.0#call` (lld rejects them
// in the version script), and native builds exist only for the unit tests.
#[cfg(target_arch = "wasm32")]
airlock_guest::export_tool!(name: "run_js", description: DESCRIPTION, handler: run_js_in_instance);

#[cfg(test)]
mod tests;
