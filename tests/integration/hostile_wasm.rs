//! A component built to be expensive to compile, written byte by byte
//! (no assembler needed): used by the compile tests and by the attack
//! bench (`host/benches/pipeline/attacks.rs` includes this file).

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
