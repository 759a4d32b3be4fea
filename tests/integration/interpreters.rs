//! Model-written code: `run_python` and `run_js` have no authority and hard
//! limits, and every failure is a result the model can read.

use crate::support::{assert_failed, call, host, tool};
use serde_json::{Value, json};

fn config(extra: &str) -> String {
    format!(
        "[tools.run_python]\ncomponent = {:?}\nside_effect = false\nmemory_mib = 512\ntimeout_ms = 1000\n{extra}\n\
         [tools.run_js]\ncomponent = {:?}\nside_effect = false\ntimeout_ms = 1000\n{extra}\n",
        tool("run_python").display().to_string(),
        tool("run_js").display().to_string(),
    )
}

fn field<'a>(value: Option<&'a Value>, key: &str) -> &'a Value {
    value.and_then(|v| v.get(key)).unwrap_or(&Value::Null)
}

#[tokio::test]
async fn print_and_final_expression() {
    let host = host(&config("")).await;
    let py = call(&host, "run_python", json!({"code": "print(1+1)\n1+1"})).await;
    assert!(!py.is_error(), "{}", py.text());
    assert_eq!(field(py.value(), "stdout"), "2\n");
    assert_eq!(field(py.value(), "result"), 2);
    let js = call(&host, "run_js", json!({"code": "console.log(1+1); 1+1"})).await;
    assert!(!js.is_error(), "{}", js.text());
    assert_eq!(field(js.value(), "stdout"), "2\n");
    assert_eq!(field(js.value(), "result"), 2);
}

#[tokio::test]
async fn exceptions_come_back_with_a_traceback() {
    let host = host(&config("")).await;
    let py = call(&host, "run_python", json!({"code": "def f():\n    raise ValueError('boom')\nf()"})).await;
    assert!(!py.is_error(), "an exception is a normal result: {}", py.text());
    let error = field(py.value(), "error");
    assert_eq!(error["name"], "ValueError");
    assert!(error["stack"].as_str().unwrap_or_default().contains("line 2"), "{error}");
    let js = call(&host, "run_js", json!({"code": "null.x"})).await;
    assert_eq!(field(js.value(), "error")["name"], "TypeError");
}

#[tokio::test]
async fn runaway_loops_stop_at_the_deadline() {
    let host = host(&config("")).await;
    // A large argument (a long comment): checking it takes part of the
    // deadline, and the message still names `timeout_ms` as configured
    // (it once named what was left, "999 ms", whenever the check took a
    // millisecond). Whether the loop or the check runs out the clock, the
    // message names 1000 ms.
    let padding = "x".repeat(256 << 10);
    let py = call(&host, "run_python", json!({"code": format!("while True: pass\n# {padding}")})).await;
    assert_failed(&py, "timeout", "1000 ms deadline");
    let js = call(&host, "run_js", json!({"code": format!("for (;;) {{}}\n// {padding}")})).await;
    assert_failed(&js, "timeout", "1000 ms deadline");
}

#[tokio::test]
async fn fuel_bound_loops_run_out_of_fuel() {
    let host = host(&config("fuel = 200000000")).await;
    let py = call(&host, "run_python", json!({"code": "while True: pass"})).await;
    assert_failed(&py, "out_of_fuel", "compute budget");
    let js = call(&host, "run_js", json!({"code": "for (;;) {}"})).await;
    assert_failed(&js, "out_of_fuel", "compute budget");
}

#[tokio::test]
async fn memory_bombs_are_contained() {
    // A generous deadline: filling the memory cap takes a while on a busy
    // machine, and this test is about the cap, not the deadline.
    let host = host(&config("").replace("timeout_ms = 1000", "timeout_ms = 20000")).await;
    let py = call(&host, "run_python", json!({"code": "x = []\nwhile True: x.append(' ' * 10**7)"})).await;
    let py_text = format!("{} {:?}", py.text(), py.value());
    assert!(py_text.contains("MemoryError") || py.outcome_name() == "out_of_memory", "{py_text}");
    let js = call(&host, "run_js", json!({"code": "let a = []; for (;;) a.push(new Array(1e6).fill(1));"})).await;
    let js_text = format!("{} {:?}", js.text(), js.value());
    assert!(js_text.contains("out of memory") || js.outcome_name() == "out_of_memory", "{js_text}");
    let ok = call(&host, "run_python", json!({"code": "1"})).await;
    assert!(!ok.is_error(), "the host serves the next call");
}

#[tokio::test]
async fn deep_recursion_does_not_crash_the_host() {
    let host = host(&config("")).await;
    let py = call(&host, "run_python", json!({"code": "def f(n): return f(n+1)\nf(0)"})).await;
    assert_eq!(field(py.value(), "error")["name"], "RecursionError", "{}", py.text());
    let js = call(&host, "run_js", json!({"code": "function f(n) { return f(n+1) + 1 } f(0)"})).await;
    assert!(js.is_error() || !field(js.value(), "error").is_null(), "{}", js.text());
    let ok = call(&host, "run_js", json!({"code": "1"})).await;
    assert!(!ok.is_error(), "the host serves the next call");
}

#[tokio::test]
async fn no_filesystem_network_or_environment() {
    let host = host(&config("")).await;
    for code in [
        "import os\nos.listdir('/')",
        "open('/etc/passwd').read()",
        "import socket\nsocket.socket().connect(('127.0.0.1', 80))",
        "import os\nos.environ['HOME']",
    ] {
        let py = call(&host, "run_python", json!({"code": code})).await;
        let error = field(py.value(), "error");
        assert!(!error.is_null(), "{code:?} must fail inside the sandbox: {}", py.text());
    }
    let js = call(&host, "run_js", json!({"code": "[typeof require, typeof std, typeof os, typeof fetch]"})).await;
    assert_eq!(field(js.value(), "result"), &json!(["undefined", "undefined", "undefined", "undefined"]));
}

#[tokio::test]
async fn each_call_gets_a_fresh_instance() {
    let host = host(&config("")).await;
    let set = call(&host, "run_python", json!({"code": "x = 41\nx + 1"})).await;
    assert_eq!(field(set.value(), "result"), 42);
    let get = call(&host, "run_python", json!({"code": "x"})).await;
    assert_eq!(field(get.value(), "error")["name"], "NameError", "{}", get.text());
    call(&host, "run_js", json!({"code": "globalThis.leak = 1"})).await;
    let js = call(&host, "run_js", json!({"code": "typeof leak"})).await;
    assert_eq!(field(js.value(), "result"), "undefined");
}

#[tokio::test]
async fn output_is_capped_with_a_note() {
    let host = host(&config("")).await;
    let py = call(&host, "run_python", json!({"code": "print('x' * 10**6)"})).await;
    assert!(!py.is_error(), "{}", py.text());
    assert!(field(py.value(), "stdout").as_str().unwrap_or_default().contains("bytes cut"), "{}", py.text().len());
}
