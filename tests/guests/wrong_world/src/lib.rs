//! `wrong_world`: a **hostile test fixture**, never a tool to ship.
//!
//! A valid component of another world (`other:thing/other`, which exports a
//! bare `run` function) instead of `airlock:tool/tool`. The host must refuse
//! to load it with an error that says it is not an Airlock tool (wasmtime
//! reports "no exported instance named …" when the typed bindings are
//! instantiated).

wit_bindgen::generate!({
    inline: "package other:thing; world other { export run: func() -> string; }",
});

struct WrongWorld;

impl Guest for WrongWorld {
    fn run() -> String {
        "this component is not an airlock tool".to_owned()
    }
}

export!(WrongWorld);
