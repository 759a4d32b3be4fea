//! Components built to be expensive to compile, written byte by byte (no
//! assembler needed): used by the compile tests and by the attack bench
//! (`host/airlock/benches/pipeline/attacks.rs` includes this file). Each is cheap
//! to write and, before the compiler process checked a component's shape,
//! was dear to refuse.

// The attack bench includes this file and builds only some of these.
#![allow(dead_code)]

fn leb(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Signed LEB128, as `i32.const` takes it.
fn sleb(mut n: i64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if (n == 0 && byte & 0x40 == 0) || (n == -1 && byte & 0x40 != 0) {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn name(text: &str, out: &mut Vec<u8>) {
    leb(text.len() as u64, out);
    out.extend_from_slice(text.as_bytes());
}

fn section(id: u8, contents: &[u8], out: &mut Vec<u8>) {
    out.push(id);
    leb(contents.len() as u64, out);
    out.extend_from_slice(contents);
}

/// A core module of `functions` functions, each with `locals` i32 locals
/// all updated inside `depth` nested loops (every local is live across
/// every loop: compile time grows with locals² × depth).
pub fn hostile_module(functions: u32, locals: u32, depth: u32) -> Vec<u8> {
    let mut body = Vec::new();
    body.push(1); // one group of locals
    leb(u64::from(locals), &mut body);
    body.push(0x7f); // i32
    for _ in 0..depth {
        body.extend_from_slice(&[0x03, 0x40]); // loop
    }
    for i in 0..locals {
        body.push(0x20); // local.get i
        leb(u64::from(i), &mut body);
        body.extend_from_slice(&[0x41, 0x01, 0x6a]); // i32.const 1; i32.add
        body.push(0x21); // local.set i
        leb(u64::from(i), &mut body);
    }
    for _ in 0..depth {
        body.extend_from_slice(&[0x20, 0x00, 0x0d, 0x00, 0x0b]); // local.get 0; br_if 0; end
    }
    body.push(0x0b); // end of the function

    let mut module = b"\0asm\x01\0\0\0".to_vec();
    section(1, &[1, 0x60, 0, 0], &mut module); // one type: [] -> []
    let mut funcs = Vec::new();
    leb(u64::from(functions), &mut funcs);
    funcs.resize(funcs.len() + functions as usize, 0); // each of type 0
    section(3, &funcs, &mut module);
    let mut code = Vec::new();
    leb(u64::from(functions), &mut code);
    for _ in 0..functions {
        leb(body.len() as u64, &mut code);
        code.extend_from_slice(&body);
    }
    section(10, &code, &mut module);
    module
}

/// A component holding one core module (it exports nothing: once
/// compiled, it is refused as not of the tool world).
pub fn component(module: &[u8]) -> Vec<u8> {
    let mut bytes = b"\0asm\x0d\0\x01\0".to_vec();
    section(1, module, &mut bytes); // core module section
    bytes
}

/// A core module with one memory and `segments` active data segments of
/// one byte each, at offsets spread over the first page: 99 999 of them
/// are ~767 KB, and took ~30 s of CPU and ~2.4 GB to compile.
pub fn data_segments_module(segments: u32) -> Vec<u8> {
    let mut module = b"\0asm\x01\0\0\0".to_vec();
    section(5, &[1, 0x00, 0x01], &mut module); // one memory of at least one page
    let mut data = Vec::new();
    leb(u64::from(segments), &mut data);
    for i in 0..segments {
        data.extend_from_slice(&[0x00, 0x41]); // active in memory 0, at i32.const …
        sleb(i64::from(i % 65_536), &mut data);
        data.extend_from_slice(&[0x0b, 0x01, 0x2a]); // end; one byte: 42
    }
    section(11, &data, &mut module);
    module
}

/// A core module of `functions` empty functions, each exported (`f0`,
/// `f1`, …): 100 000 of them are ~1.7 MB, and took ~15 s of CPU and ~1.2 GB
/// to compile before the component was found to export nothing a tool
/// exports.
pub fn exports_module(functions: u32) -> Vec<u8> {
    let mut module = b"\0asm\x01\0\0\0".to_vec();
    section(1, &[1, 0x60, 0, 0], &mut module); // one type: [] -> []
    let mut funcs = Vec::new();
    leb(u64::from(functions), &mut funcs);
    funcs.resize(funcs.len() + functions as usize, 0);
    section(3, &funcs, &mut module);
    let mut exports = Vec::new();
    leb(u64::from(functions), &mut exports);
    for i in 0..functions {
        name(&format!("func{i}"), &mut exports);
        exports.push(0x00); // a function
        leb(u64::from(i), &mut exports);
    }
    section(7, &exports, &mut module);
    let mut code = Vec::new();
    leb(u64::from(functions), &mut code);
    for _ in 0..functions {
        code.extend_from_slice(&[2, 0, 0x0b]); // two bytes: no locals; end
    }
    section(10, &code, &mut module);
    module
}

/// A component holding one core module that exports, by name, the two
/// interfaces of an `airlock:tool@0.2.0` component (each an empty
/// instance): it passes the checks made before compiling, so compiling it
/// is what costs; once compiled, it is refused when bound to the tool
/// world (the instances have no functions).
pub fn tool_shaped_component(module: &[u8]) -> Vec<u8> {
    let mut bytes = component(module);
    section(5, &[2, 0x01, 0x00, 0x01, 0x00], &mut bytes); // two instances of no exports
    let mut exports = vec![2];
    for (index, interface) in ["airlock:tool/metadata@0.2.0", "airlock:tool/handler@0.2.0"].into_iter().enumerate() {
        exports.push(0x00); // a plain name
        name(interface, &mut exports);
        exports.push(0x05); // an instance
        leb(index as u64, &mut exports);
        exports.push(0x00); // no type ascribed
    }
    section(11, &exports, &mut bytes);
    bytes
}
