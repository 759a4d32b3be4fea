//! Compiles `src/prelude.js` to QuickJS bytecode once, at build time, so that
//! a fresh interpreter loads the prelude instead of parsing it: parsing its
//! 12 KB took about four fifths of the guest's time in a fresh `run_js` call.
//!
//! The bytecode is written by a native build of the same pinned QuickJS-NG
//! (rquickjs, exact version, as in `[dependencies]`), little-endian like
//! wasm32. Bytecode carries the QuickJS bytecode version, and the reader
//! refuses bytecode of another version, so a mismatch fails loudly at the
//! first call (the unit tests and integration tests run the prelude).

// A build script stops the build with the reason when its one job fails.
#![allow(clippy::expect_used)]

use rquickjs::{Context, Module, Runtime, WriteOptions, WriteOptionsEndianness};
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/prelude.js");
    let prelude = std::fs::read_to_string("src/prelude.js").expect("reading src/prelude.js");
    // The prelude is a function expression; as a module, it is the default
    // export (module code is strict, and the prelude is already 'use strict').
    let source = format!("export default {prelude};\n");
    let runtime = Runtime::new().expect("a QuickJS runtime");
    let context = Context::full(&runtime).expect("a QuickJS context");
    let bytecode = context
        .with(|ctx| {
            let module = Module::declare(ctx.clone(), "<prelude>", source)?;
            module.write(WriteOptions { endianness: WriteOptionsEndianness::Little, ..Default::default() })
        })
        .expect("compiling src/prelude.js");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo")).join("prelude.qjsbc");
    std::fs::write(&out, bytecode).expect("writing the prelude bytecode");
}
