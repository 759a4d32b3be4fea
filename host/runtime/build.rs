//! Builds the metered JSON Schema validator (`host/validator`, a
//! WebAssembly component) for the host to embed.
//!
//! The host evaluates every schema a tool declared inside its own engine,
//! under an epoch deadline and a memory cap (see `src/validator.rs`); the
//! component it runs for that is built here, by a nested `cargo build` for
//! `wasm32-wasip2` into a target directory of its own (the outer build holds
//! the lock of its own target directory), and copied to `OUT_DIR`.

use sha2::Digest as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    if let Err(err) = build() {
        println!("cargo::error={err}");
    }
}

fn build() -> Result<(), String> {
    let var = |name: &str| std::env::var_os(name).ok_or(format!("{name} is not set"));
    let manifest_dir = PathBuf::from(var("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(var("OUT_DIR")?);
    let workspace =
        manifest_dir.ancestors().nth(2).ok_or("the runtime crate is not two levels below the workspace")?.to_owned();
    for input in ["host/validator/src", "host/validator/Cargo.toml", "wit/validator", "Cargo.lock"] {
        println!("cargo::rerun-if-changed={}", workspace.join(input).display());
    }
    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out: the nested
    // build gets a directory beside the profiles, shared by every profile
    // and by `cargo check`/`clippy` (which run this script too).
    let target_dir = out_dir
        .ancestors()
        .nth(4)
        .map(|target| target.join("validator"))
        .unwrap_or_else(|| out_dir.join("validator-target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["build", "--release", "--target", "wasm32-wasip2", "-p", "airlock-validator", "--manifest-path"])
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    // What the outer build set for itself must not leak into the nested
    // one: clippy's wrapper would skip code generation, and the outer
    // flags are for the host's target.
    for name in [
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        command.env_remove(name);
    }
    let status = command.status().map_err(|err| format!("cannot run cargo for the validator component: {err}"))?;
    if !status.success() {
        return Err(format!(
            "building the validator component failed ({status}); it needs the wasm32-wasip2 target: \
             `rustup target add wasm32-wasip2`"
        ));
    }
    let built = target_dir.join("wasm32-wasip2/release/airlock_validator.wasm");
    let bytes = std::fs::read(&built).map_err(|err| format!("reading {}: {err}", built.display()))?;
    write(&out_dir.join("validator.wasm"), &bytes)?;
    // Its digest names its compiled artifact in the cache. Hashing the
    // embedded bytes at run time cost every start milliseconds, most of
    // them paging the bytes in.
    let digest: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    write(&out_dir.join("validator.sha256"), digest.as_bytes())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|err| format!("writing {}: {err}", path.display()))
}
