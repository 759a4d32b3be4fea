//! Unit tests of the interpreter logic, run natively (`cargo test`).

use super::*;
use serde_json::{Value as Json, json};

fn run_with(code: &str, stdin: Option<&str>) -> RunOutput {
    let out = run_js(Args { code: code.to_owned(), stdin: stdin.map(str::to_owned), session_id: None })
        .expect("run_js failed");
    // Every result serializes to JSON text the host can parse back.
    let text = serde_json::to_string(&out).unwrap();
    let _: Json = serde_json::from_str(&text).unwrap();
    out
}

fn run(code: &str) -> RunOutput {
    run_with(code, None)
}

/// `code`'s (result, result_repr).
fn check_result(code: &str, result: Json, repr: Option<&str>) {
    let out = run(code);
    assert_eq!(out.error, None, "{code}");
    assert_eq!((out.result, out.result_repr.as_deref()), (result, repr), "{code}");
}

fn error_of(code: &str) -> JsError {
    run(code).error.unwrap_or_else(|| panic!("{code} did not throw"))
}

#[test]
fn console_log_goes_to_stdout_and_error_to_stderr() {
    let out = run("console.log('hi', {a: 1}, [1, 'x']); console.error('bad'); console.warn('w'); print(3)");
    assert_eq!(out.stdout, "hi { a: 1 } [ 1, 'x' ]\n3\n");
    assert_eq!(out.stderr, "bad\nw\n");
    assert_eq!(out.result, Json::Null);
    assert_eq!(out.result_repr, None);
}

#[test]
fn console_formats_like_node() {
    let out = run("console.log('%s has %d items (%i%%)', 'cart', 3.5, 42.9);\n\
         console.log(new Map([[1, {b: 2}]]), new Set(['a']), 10n, -0, undefined, null);\n\
         console.log(function f() {}, class K {}, Symbol('s'), new Error('boom').message);\n\
         const o = {self: null, 'k-1': [1, [2, [3, [4, [5, [6]]]]]]}; o.self = o; console.log(o);");
    assert_eq!(
        out.stdout,
        "cart has 3.5 items (42%)\n\
         Map(1) { 1 => { b: 2 } } Set(1) { 'a' } 10n -0 undefined null\n\
         [Function: f] [class K] Symbol(s) boom\n\
         { self: [Circular], 'k-1': [ 1, [ 2, [ 3, [ 4, [Array] ] ] ] ] }\n"
    );
}

#[test]
fn last_expression_is_the_result() {
    check_result("1 + 1", json!(2), None);
    check_result("const x = {a: [1, 2.5, null, true, 'é']}; x", json!({"a": [1, 2.5, null, true, "é"]}), None);
    check_result("let y = 1", Json::Null, None);
    check_result("undefined", Json::Null, None);
    check_result("new Date(0)", json!("1970-01-01T00:00:00.000Z"), None);
    check_result("if (true) { 'from a block' }", json!("from a block"), None);
}

#[test]
fn values_without_json_form_get_a_repr() {
    check_result("NaN", Json::Null, Some("NaN"));
    check_result("[1, Infinity]", json!([1, null]), Some("[ 1, Infinity ]"));
    check_result("2n ** 70n", json!("1180591620717411303424"), Some("1180591620717411303424n"));
    check_result("new Map([['k', 1]])", json!({}), Some("Map(1) { 'k' => 1 }"));
    check_result("(function named() {})", Json::Null, Some("[Function: named]"));
    check_result("const a = []; a.push(a); a", Json::Null, Some("[ [Circular] ]"));
    check_result("Symbol('s')", Json::Null, Some("Symbol(s)"));
}

#[test]
fn promises_and_top_level_await_are_awaited() {
    check_result("await Promise.resolve(41) + 1", json!(42), None);
    check_result("(async () => { await null; return 'done'; })()", json!("done"), None);
    let out = run("Promise.resolve().then(() => console.log('job ran')); 7");
    assert_eq!((out.stdout.as_str(), out.result), ("job ran\n", json!(7)));
}

#[test]
fn rejected_and_unsettled_promises_are_errors() {
    let err = error_of("async function main() { throw new TypeError('nope'); }\nmain()");
    assert_eq!((err.name.as_str(), err.message.as_str()), ("TypeError", "nope"));
    let err = error_of("new Promise(() => {})");
    assert!(err.message.contains("never settled"), "{err:?}");
    let out = run("Promise.reject(new Error('lost')); 1");
    assert_eq!(out.result, json!(1));
    assert!(out.stderr.starts_with("Uncaught (in promise) Error: lost"), "{}", out.stderr);
    // A rejection handled later is not reported.
    let out = run("const p = Promise.reject(1); await null; p.catch(() => {}); 2");
    assert_eq!((out.stderr.as_str(), out.result), ("", json!(2)));
}

#[test]
fn exceptions_are_results_with_a_stack() {
    let out = run("console.log('before');\nfunction f(x) {\n  return x.y.z;\n}\nf({});");
    assert_eq!(out.stdout, "before\n");
    let err = out.error.unwrap();
    assert_eq!(err.name, "TypeError");
    assert!(err.message.contains("undefined"), "{err:?}");
    assert!(err.stack.contains("at f (<code>:3:"), "{err:?}");
    assert!(!err.stack.contains("prelude"), "{err:?}");
}

#[test]
fn syntax_errors_and_thrown_values() {
    let err = error_of("let x = ;");
    assert_eq!(err.name, "SyntaxError");
    assert!(err.stack.contains("<code>:1"), "{err:?}");
    let err = error_of("throw 'plain'");
    assert_eq!((err.name.as_str(), err.message.as_str(), err.stack.as_str()), ("Uncaught", "plain", ""));
    let err = error_of("throw {code: 7}");
    assert_eq!(err.message, "{ code: 7 }");
}

#[test]
fn limits_become_errors() {
    let err = error_of("function f(n) { return f(n + 1) + 1; }\nf(0)");
    assert_eq!((err.name.as_str(), err.message.as_str()), ("RangeError", "Maximum call stack size exceeded"));
    let err = error_of("const a = []; while (true) a.push(new Array(100000).fill(1));");
    assert_eq!((err.name.as_str(), err.message.as_str()), ("InternalError", "out of memory"));
    let err = error_of("let s = 'x'; while (true) s += s;");
    assert_eq!(err.name, "InternalError", "{err:?}"); // "string too long" or "out of memory"
}

#[test]
fn stdin_is_readable() {
    let out = run_with("const a = readline(); const b = readline(); [a, b, readline(), stdin.length]", Some("x\r\ny"));
    assert_eq!(out.result, json!(["x", "y", null, 4]));
    check_result("stdin", json!(""), None);
}

#[test]
fn globals_can_be_redeclared() {
    check_result("const print = 1; let stdin = 2; print + stdin", json!(3), None);
}

#[test]
fn no_host_access() {
    for name in ["require", "process", "std", "os", "fetch", "setTimeout"] {
        check_result(&format!("typeof {name}"), json!("undefined"), None);
    }
    let err = error_of("await import('os')");
    assert!(!err.message.is_empty());
}

#[test]
fn output_is_capped() {
    let out = run("for (let i = 0; i < 100000; i++) console.log('0123456789');");
    assert!(out.stdout.len() < MAX_STREAM_BYTES + 100);
    assert!(
        out.stdout.ends_with(&format!("[… {} bytes cut]", 1_100_000 - MAX_STREAM_BYTES)),
        "{}",
        &out.stdout[out.stdout.len() - 50..]
    );
    let out = run("Array.from({length: 100000}, (_, i) => i)");
    assert_eq!(out.result, Json::Null);
    assert!(out.result_repr.unwrap().ends_with("bytes cut]"));
}

#[test]
fn lone_surrogates_do_not_break_the_result() {
    let out = run("console.log('a\\ud800b'); 'c\\udc00'");
    assert_eq!((out.stdout.as_str(), out.result), ("a\u{fffd}b\n", json!("c\u{fffd}")));
    let out = run("throw new Error('\\ud800')");
    assert_eq!(out.error.unwrap().message, "\u{fffd}");
}

#[test]
fn oversized_arguments_are_tool_errors() {
    let err = run_js(Args { code: " ".repeat(MAX_CODE_BYTES + 1), stdin: None, session_id: None }).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("code_too_large"));
    let err = run_js(Args { code: String::new(), stdin: Some(" ".repeat(MAX_STDIN_BYTES + 1)), session_id: None })
        .unwrap_err();
    assert_eq!(err.code.as_deref(), Some("stdin_too_large"));
}

#[test]
fn schemas_describe_the_shapes() {
    let params = airlock_guest::schema::parameters::<Args>();
    assert_eq!(params["required"], json!(["code"]));
    assert_eq!(params["additionalProperties"], json!(false));
    // The optional members accept `null` and carry no `default`.
    for name in ["stdin", "session_id"] {
        assert_eq!(params["properties"][name]["type"], json!(["string", "null"]), "{name}");
        assert!(params["properties"][name].get("default").is_none(), "{name}");
    }
    assert!(params["properties"].get("session").is_none(), "the argument is `session_id`");
    let output = airlock_guest::schema::output::<RunOutput>();
    assert_eq!(output["required"], json!(["stdout", "stderr", "result"]));
}

fn args(code: &str) -> Args {
    Args { code: code.to_owned(), stdin: None, session_id: None }
}

#[test]
fn one_interpreter_keeps_its_globals() {
    let interpreter = Interpreter::new().unwrap();
    interpreter.run(args("let x = 41; var y = 1; function f() { return x + y }")).unwrap();
    assert_eq!(interpreter.run(args("f()")).unwrap().result, json!(42));
    let fresh = run_js(args("typeof f")).unwrap();
    assert_eq!(fresh.result, json!("undefined"), "a fresh interpreter has nothing");
}

#[test]
fn each_run_has_its_own_output_and_stdin() {
    let interpreter = Interpreter::new().unwrap();
    let first =
        Args { stdin: Some("a\nb".into()), ..args("console.log(readline()); Promise.reject(new Error('late')); 1") };
    let out = interpreter.run(first).unwrap();
    assert_eq!(out.stdout, "a\n");
    assert!(out.stderr.contains("late"), "{}", out.stderr);
    let second = Args { stdin: Some("c".into()), ..args("console.log(readline(), stdin); readline()") };
    let out = interpreter.run(second).unwrap();
    assert_eq!(out.stdout, "c c\n", "only this run's output and stdin");
    assert_eq!(out.stderr, "", "the earlier rejection is not reported twice");
    assert_eq!(out.result, Json::Null);
}

#[test]
fn replaced_builtins_do_not_break_the_next_run() {
    let interpreter = Interpreter::new().unwrap();
    interpreter.run(args("JSON.stringify = () => 'tampered'; Object.keys = null")).unwrap();
    let out = interpreter.run(args("({a: [1, 2]})")).unwrap();
    assert_eq!(out.result, json!({"a": [1, 2]}), "the helpers kept the original builtins");
}

#[test]
fn a_session_argument_reaching_the_tool_is_refused() {
    let err = run_js_in_instance(Args { session_id: Some("s1".into()), ..args("1") }).unwrap_err();
    assert!(format!("{err:?}").contains("sessions_disabled"), "{err:?}");
}

#[test]
fn show_attaches_pictures_sounds_and_files() {
    use airlock_guest::content::{Body, Content, take_attached};
    take_attached();
    let out = run("show(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), 'image/png');\n\
                   show(new Uint8Array([1, 2]).buffer, 'audio/wav');\n\
                   show('<svg/>', 'Image/SVG+XML');\n\
                   show(new Uint8Array([37, 80]), 'application/pdf');\n\
                   show(new Uint8Array([0xff, 0xd8]))");
    assert_eq!(out.error, None);
    let attached = take_attached();
    assert_eq!(attached.len(), 5);
    assert_eq!(attached[0], Content::image("image/png", vec![0x89, 0x50, 0x4e, 0x47]));
    assert_eq!(attached[1], Content::audio("audio/wav", vec![1, 2]));
    assert_eq!(attached[2], Content::embedded_text("airlock:run_js/shown-3", "image/svg+xml", "<svg/>"));
    let Content::Embedded { body: Body::Blob(pdf), .. } = &attached[3] else { panic!("{:?}", attached[3]) };
    assert_eq!(pdf, &[37, 80]);
    assert_eq!(attached[4], Content::image("image/png", vec![0xff, 0xd8]), "image/png unless told otherwise");
}

#[test]
fn show_refuses_what_it_cannot_attach_and_counts_per_run() {
    use airlock_guest::content::take_attached;
    take_attached();
    for (code, name, needle) in [
        ("show('text', 'image/png')", "TypeError", "must be a Uint8Array or an ArrayBuffer, not string"),
        ("show([1, 2], 'application/pdf')", "TypeError", "a Uint8Array, an ArrayBuffer or a string"),
        ("show(new Uint8Array(1), '')", "TypeError", "mimeType must be a media type"),
        ("for (let i = 0; i < 17; i++) show('x', 'text/plain')", "RangeError", "at most 16 blocks"),
    ] {
        let error = error_of(code);
        assert_eq!(error.name, name, "{code}");
        assert!(error.message.contains(needle), "{code}: {}", error.message);
    }
    assert_eq!(take_attached().len(), 16, "the blocks before the cap were attached");
    let interpreter = Interpreter::new().unwrap();
    for _ in 0..2 {
        let args =
            Args { code: "for (let i = 0; i < 16; i++) show('x', 'text/plain')".into(), stdin: None, session_id: None };
        assert_eq!(interpreter.run(args).unwrap().error, None);
    }
    assert_eq!(take_attached().len(), 32);
}

#[test]
fn the_description_fits_the_clients_that_cap_it() {
    assert!(DESCRIPTION.chars().count() <= 1024, "{}", DESCRIPTION.chars().count());
    assert!(DESCRIPTION.contains("show(data, mimeType)"));
}
