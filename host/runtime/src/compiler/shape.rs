//! The shape of a component, checked before it is compiled: one pass of
//! wasmparser's parser over the bytes counts what the cost of native
//! compilation grows with (functions, locals per function, data and element
//! segments, exports, imports, types, nested modules, …), refuses a count
//! over its cap as soon as the count is read, and finds from the export and
//! import names whether the component can be an `airlock:tool` component at
//! all.
//!
//! Trusts nothing in the bytes. It runs at the start of the compiler process
//! (`airlock __compile`), under that process's CPU and address-space limits,
//! never in the host: what a tool author wrote is only ever read under a
//! hard meter. The pass is cheap anyway: a section's item count is read from
//! its header, so a cap is checked before any item of the section is read;
//! the only items read one by one are function bodies' local declarations
//! and the top-level export and import names, each bounded by a cap. The
//! parser is wasmparser 0.254, the version wasmtime 48 uses, with every
//! proposal enabled (its default): it accepts everything wasmtime's own
//! parser accepts, so a component that compiles is never refused here as
//! malformed. Nothing is validated here (wasmtime validates while it
//! compiles), and the world is checked by name only: the exported
//! interfaces' types are checked once the component is compiled, when it is
//! bound to the tool world.
//!
//! Each cap is a named constant well above what the bundled tools need (the
//! counts measured on them are in each doc comment): a component over one is
//! built to be expensive to compile, not a tool.

use std::fmt::Write as _;
use wasmparser::{Parser, Payload};

// Measured on the bundled tools (`make guests`, December 2026): `run_python`
// (21.4 MB, CPython with its native modules linked as 17 core modules),
// `run_js` (1.6 MB) and the largest of the seven others. Each cap is 4–10×
// the largest, except where said.

/// Sections of all the modules and components in one component, custom
/// sections included: a section costs a step even when it is empty, so
/// millions of empty sections would cost time without costing bytes.
/// Measured: `run_python` 628, `run_js` 197, the others at most 234.
pub const MAX_SECTIONS: u64 = 5_000;
/// Core modules and components nested in one component, counted once
/// each. Measured: `run_python` 17, `run_js` 5, the others 5.
pub const MAX_MODULES: u64 = 100;
/// How deeply modules and components nest (the outer component is 1; each
/// composition of components adds a level). Measured: 2 in every bundled
/// tool.
pub const MAX_NESTING: u64 = 8;
/// Functions defined by all the core modules of one component, each of
/// which is compiled. Measured: `run_python` 13 361, `run_js` 1 967, the
/// others at most 1 913.
pub const MAX_FUNCTIONS: u64 = 100_000;
/// Locals one function declares. Compile time grows with the square of
/// the locals live across a loop: one function of 20 000 locals in 10
/// nested loops took ~160 s of CPU to compile. Measured: `run_python` 271,
/// `run_js` 43, the others at most 57. At the cap, that function costs
/// about 1/64 of it, and the CPU meter bounds the rest.
pub const MAX_LOCALS_PER_FUNCTION: u64 = 2_500;
/// Bytes of one function body. Measured: `run_python` 426 843 (CPython's
/// interpreter loop), `run_js` 51 117, the others at most 12 723.
pub const MAX_FUNCTION_BODY_BYTES: u64 = 4 << 20;
/// Data segments of all the core modules: 99 999 one-byte segments took
/// ~30 s of CPU and ~2.4 GB to compile. Measured: `run_python` 2 453
/// (one per linked object's data), `run_js` 2, the others 2.
pub const MAX_DATA_SEGMENTS: u64 = 20_000;
/// Element segments of all the core modules (each, like a data segment, is
/// laid out by the compiler). Measured: `run_python` 8, `run_js` 2, the
/// others 2; the cap is 12× the largest.
pub const MAX_ELEMENT_SEGMENTS: u64 = 100;
/// Globals of all the core modules. Measured: `run_python` 874, `run_js`
/// 47, the others at most 69.
pub const MAX_GLOBALS: u64 = 8_000;
/// Exports of all the modules and components, core and component exports:
/// 100 000 exports took ~15 s of CPU and ~1.2 GB to compile. Measured:
/// `run_python` 4 222 (its modules export their symbols to each other),
/// `run_js` 37, the others at most 45.
pub const MAX_EXPORTS: u64 = 40_000;
/// Imports of all the modules and components. Measured: `run_python`
/// 2 302, `run_js` 71, the others at most 98.
pub const MAX_IMPORTS: u64 = 20_000;
/// Type definitions of all the modules and components, core and component
/// types. Measured: `run_python` 1 233, `run_js` 166, the others at most 86.
pub const MAX_TYPES: u64 = 10_000;
/// Canonical functions (`canon lift`, `canon lower`, resource and async
/// built-ins) of all the components: each is compiled to a trampoline.
/// Measured: `run_python` 127, `run_js` 35, the others at most 57.
pub const MAX_CANONICAL_FUNCTIONS: u64 = 1_000;
/// Core and component instances and aliases of all the components.
/// Measured: `run_python` 1 413, `run_js` 95, the others at most 129.
pub const MAX_INSTANCES_AND_ALIASES: u64 = 10_000;

/// How many of the component's top-level export names a refusal lists.
const NAMES_SHOWN: usize = 8;

/// The interfaces a tool exports (of one contract version).
const METADATA: &str = "airlock:tool/metadata@";
/// The handler interface a tool exports.
const HANDLER: &str = "airlock:tool/handler@";
/// The contract versions a tool may export, as the semver-compatible
/// prefix of the version (`0.2.x` for `0.2.0`): wasmtime looks exports up
/// by compatible version.
const CONTRACTS: [&str; 3] = ["0.3.", "0.2.", "0.1."];

/// What one pass counts, each with its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    /// [`MAX_SECTIONS`].
    Sections,
    /// [`MAX_MODULES`].
    Modules,
    /// [`MAX_NESTING`] (the deepest, not a total).
    Nesting,
    /// [`MAX_FUNCTIONS`].
    Functions,
    /// [`MAX_LOCALS_PER_FUNCTION`] (the largest, not a total).
    LocalsPerFunction,
    /// [`MAX_FUNCTION_BODY_BYTES`] (the largest, not a total).
    FunctionBodyBytes,
    /// [`MAX_DATA_SEGMENTS`].
    DataSegments,
    /// [`MAX_ELEMENT_SEGMENTS`].
    ElementSegments,
    /// [`MAX_GLOBALS`].
    Globals,
    /// [`MAX_EXPORTS`].
    Exports,
    /// [`MAX_IMPORTS`].
    Imports,
    /// [`MAX_TYPES`].
    Types,
    /// [`MAX_CANONICAL_FUNCTIONS`].
    CanonicalFunctions,
    /// [`MAX_INSTANCES_AND_ALIASES`].
    InstancesAndAliases,
}

impl Count {
    /// Every count, in the order a report lists them.
    pub(crate) const ALL: [Count; 14] = [
        Count::Sections,
        Count::Modules,
        Count::Nesting,
        Count::Functions,
        Count::LocalsPerFunction,
        Count::FunctionBodyBytes,
        Count::DataSegments,
        Count::ElementSegments,
        Count::Globals,
        Count::Exports,
        Count::Imports,
        Count::Types,
        Count::CanonicalFunctions,
        Count::InstancesAndAliases,
    ];

    /// The cap.
    pub(crate) fn cap(self) -> u64 {
        match self {
            Count::Sections => MAX_SECTIONS,
            Count::Modules => MAX_MODULES,
            Count::Nesting => MAX_NESTING,
            Count::Functions => MAX_FUNCTIONS,
            Count::LocalsPerFunction => MAX_LOCALS_PER_FUNCTION,
            Count::FunctionBodyBytes => MAX_FUNCTION_BODY_BYTES,
            Count::DataSegments => MAX_DATA_SEGMENTS,
            Count::ElementSegments => MAX_ELEMENT_SEGMENTS,
            Count::Globals => MAX_GLOBALS,
            Count::Exports => MAX_EXPORTS,
            Count::Imports => MAX_IMPORTS,
            Count::Types => MAX_TYPES,
            Count::CanonicalFunctions => MAX_CANONICAL_FUNCTIONS,
            Count::InstancesAndAliases => MAX_INSTANCES_AND_ALIASES,
        }
    }

    /// The constant's name, as the book's table of caps lists it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Count::Sections => "MAX_SECTIONS",
            Count::Modules => "MAX_MODULES",
            Count::Nesting => "MAX_NESTING",
            Count::Functions => "MAX_FUNCTIONS",
            Count::LocalsPerFunction => "MAX_LOCALS_PER_FUNCTION",
            Count::FunctionBodyBytes => "MAX_FUNCTION_BODY_BYTES",
            Count::DataSegments => "MAX_DATA_SEGMENTS",
            Count::ElementSegments => "MAX_ELEMENT_SEGMENTS",
            Count::Globals => "MAX_GLOBALS",
            Count::Exports => "MAX_EXPORTS",
            Count::Imports => "MAX_IMPORTS",
            Count::Types => "MAX_TYPES",
            Count::CanonicalFunctions => "MAX_CANONICAL_FUNCTIONS",
            Count::InstancesAndAliases => "MAX_INSTANCES_AND_ALIASES",
        }
    }

    /// What is counted, in a refusal's words.
    fn what(self) -> &'static str {
        match self {
            Count::Sections => "sections",
            Count::Modules => "nested modules and components",
            Count::Nesting => "levels of nested modules and components",
            Count::Functions => "functions",
            Count::LocalsPerFunction => "locals in one function",
            Count::FunctionBodyBytes => "bytes in one function body",
            Count::DataSegments => "data segments",
            Count::ElementSegments => "element segments",
            Count::Globals => "globals",
            Count::Exports => "exports",
            Count::Imports => "imports",
            Count::Types => "type definitions",
            Count::CanonicalFunctions => "canonical functions",
            Count::InstancesAndAliases => "instances and aliases",
        }
    }

    /// A total over the whole component (else the largest of one item).
    fn is_total(self) -> bool {
        !matches!(self, Count::Nesting | Count::LocalsPerFunction | Count::FunctionBodyBytes)
    }
}

/// Why the bytes are refused before compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A count is over its cap (the message names the cap).
    Cap(String),
    /// The component cannot be of the `airlock:tool` world (what it exports
    /// or imports instead).
    World(String),
    /// The bytes do not parse (wasmparser's words and the offset).
    Invalid(String),
}

/// The counts of one component, as far as the pass got: one value per
/// [`Count`], in the order of [`Count::ALL`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    values: [u64; Count::ALL.len()],
}

impl Shape {
    /// The value of one count.
    pub(crate) fn get(&self, count: Count) -> u64 {
        self.values.get(count as usize).copied().unwrap_or(0)
    }

    /// Add `n` to a total, or raise a largest-of-one count to `n`; refuse
    /// once it is over its cap.
    fn count(&mut self, count: Count, n: u64) -> Result<(), Refusal> {
        let Some(slot) = self.values.get_mut(count as usize) else { return Ok(()) };
        *slot = if count.is_total() { slot.saturating_add(n) } else { (*slot).max(n) };
        let value = *slot;
        if value <= count.cap() { Ok(()) } else { Err(over(count, value)) }
    }

    /// Refuse a section that declares `n` items of a total counted
    /// elsewhere, without counting them (the code section's bodies, which
    /// must match the functions declared).
    fn declared(&self, count: Count, n: u64) -> Result<(), Refusal> {
        if n <= count.cap() { Ok(()) } else { Err(over(count, n.max(self.get(count)))) }
    }
}

/// The refusal of `value` over the cap of `count`.
fn over(count: Count, value: u64) -> Refusal {
    let (what, cap, name) = (count.what(), count.cap(), count.name());
    let amount = if count.is_total() { format!("has at least {value}") } else { format!("has one with {value}") };
    Refusal::Cap(format!(
        "refused before compiling: it {amount} {what}, over the cap of {cap} ({name}; the bundled tools have at most \
         a quarter of it): a component shaped like this is built to be expensive to compile, not a tool"
    ))
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> =
            Count::ALL.iter().map(|count| format!("{} {}", count.what(), self.get(*count))).collect();
        f.write_str(&parts.join(", "))
    }
}

/// What the top-level exports and imports say about the world.
#[derive(Default)]
struct World {
    /// `[metadata, handler]` found, per entry of [`CONTRACTS`].
    found: [[bool; 2]; 3],
    /// The first [`NAMES_SHOWN`] top-level export names, for a refusal.
    names: Vec<String>,
    /// Top-level exports in all.
    exports: u64,
}

impl World {
    fn export(&mut self, name: &str) {
        self.exports = self.exports.saturating_add(1);
        if self.names.len() < NAMES_SHOWN {
            self.names.push(name.to_owned());
        }
        for (which, prefix) in [METADATA, HANDLER].into_iter().enumerate() {
            let Some(version) = name.strip_prefix(prefix) else { continue };
            for (contract, family) in CONTRACTS.into_iter().enumerate() {
                if version.starts_with(family)
                    && let Some(slot) = self.found.get_mut(contract).and_then(|found| found.get_mut(which))
                {
                    *slot = true;
                }
            }
        }
    }

    fn check(&self) -> Result<(), Refusal> {
        if self.found.iter().any(|found| found.iter().all(|f| *f)) {
            return Ok(());
        }
        let mut exported = if self.exports == 0 {
            "it exports nothing".to_owned()
        } else {
            format!("it exports {}", self.names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))
        };
        let more = self.exports.saturating_sub(self.names.len() as u64);
        if more > 0 {
            let _ = write!(exported, " and {more} more");
        }
        Err(Refusal::World(format!(
            "{exported} (a tool must export airlock:tool/metadata and airlock:tool/handler, of version 0.3.0, 0.2.0 or 0.1.0)"
        )))
    }
}

/// Whether the host can provide an import of this name: WASI 0.2
/// interfaces and `airlock:tool`'s own (`caller`, `content`, `progress`,
/// `log`). Anything else can never
/// be linked, so there is no use compiling the component.
fn importable(name: &str) -> bool {
    name.starts_with("wasi:") || name.starts_with("airlock:tool/")
}

/// Feed what these checks decide by into `hasher`: every cap and the
/// contract versions. A refusal the compile cache remembers is keyed by it,
/// so a changed cap checks the components it refused again.
pub(crate) fn fingerprint(hasher: &mut impl std::hash::Hasher) {
    for count in Count::ALL {
        hasher.write_u64(count.cap());
    }
    for contract in CONTRACTS {
        hasher.write(contract.as_bytes());
    }
}

/// Count the shape of `bytes` (a component: the header was checked) and
/// check it against the caps and the tool world, in one pass that stops at
/// the first refusal.
///
/// # Errors
///
/// [`Refusal::Cap`] for a count over its cap, [`Refusal::World`] for a
/// component that exports no `airlock:tool` interfaces of a supported
/// version or imports something the host does not provide,
/// [`Refusal::Invalid`] for bytes that do not parse.
pub(crate) fn check(bytes: &[u8]) -> Result<Shape, Refusal> {
    let mut shape = Shape::default();
    let mut world = World::default();
    let mut depth: u64 = 0;
    let invalid = |err: wasmparser::BinaryReaderError| Refusal::Invalid(format!("{err}"));
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(invalid)?;
        match &payload {
            Payload::Version { .. } => {
                depth = depth.saturating_add(1);
                shape.count(Count::Nesting, depth)?;
                if depth > 1 {
                    shape.count(Count::Modules, 1)?;
                }
                continue;
            }
            Payload::End(_) => {
                depth = depth.saturating_sub(1);
                continue;
            }
            Payload::CodeSectionEntry(body) => {
                let len = body.range().len() as u64;
                shape.count(Count::FunctionBodyBytes, len)?;
                let mut locals = body.get_locals_reader().map_err(invalid)?;
                // Declarations of zero locals still cost a step each.
                let declarations = u64::from(locals.get_count());
                shape.count(Count::LocalsPerFunction, declarations)?;
                let mut total: u64 = 0;
                for _ in 0..declarations {
                    let (n, _) = locals.read().map_err(invalid)?;
                    total = total.saturating_add(u64::from(n));
                    shape.count(Count::LocalsPerFunction, total)?;
                }
                continue;
            }
            _ => {}
        }
        shape.count(Count::Sections, 1)?;
        match payload {
            Payload::TypeSection(s) => shape.count(Count::Types, u64::from(s.count()))?,
            Payload::CoreTypeSection(s) => shape.count(Count::Types, u64::from(s.count()))?,
            Payload::ComponentTypeSection(s) => shape.count(Count::Types, u64::from(s.count()))?,
            Payload::ImportSection(s) => shape.count(Count::Imports, u64::from(s.count()))?,
            Payload::FunctionSection(s) => shape.count(Count::Functions, u64::from(s.count()))?,
            Payload::GlobalSection(s) => shape.count(Count::Globals, u64::from(s.count()))?,
            Payload::ExportSection(s) => shape.count(Count::Exports, u64::from(s.count()))?,
            Payload::ElementSection(s) => shape.count(Count::ElementSegments, u64::from(s.count()))?,
            Payload::DataSection(s) => shape.count(Count::DataSegments, u64::from(s.count()))?,
            Payload::CodeSectionStart { count, .. } => shape.declared(Count::Functions, u64::from(count))?,
            Payload::InstanceSection(s) => shape.count(Count::InstancesAndAliases, u64::from(s.count()))?,
            Payload::ComponentInstanceSection(s) => shape.count(Count::InstancesAndAliases, u64::from(s.count()))?,
            Payload::ComponentAliasSection(s) => shape.count(Count::InstancesAndAliases, u64::from(s.count()))?,
            Payload::ComponentCanonicalSection(s) => shape.count(Count::CanonicalFunctions, u64::from(s.count()))?,
            Payload::ComponentImportSection(s) => {
                shape.count(Count::Imports, u64::from(s.count()))?;
                if depth == 1 {
                    for import in s {
                        let import = import.map_err(invalid)?;
                        if !importable(import.name.name) {
                            return Err(Refusal::World(format!(
                                "it imports `{}`, which the host does not provide (a tool may import only WASI 0.2 \
                                 interfaces)",
                                import.name.name
                            )));
                        }
                    }
                }
            }
            Payload::ComponentExportSection(s) => {
                shape.count(Count::Exports, u64::from(s.count()))?;
                if depth == 1 {
                    for export in s {
                        world.export(export.map_err(invalid)?.name.name);
                    }
                }
            }
            _ => {}
        }
    }
    world.check()?;
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_name_their_caps() {
        for count in Count::ALL {
            let mut shape = Shape::default();
            assert!(shape.count(count, count.cap()).is_ok(), "{count:?}");
            let Err(Refusal::Cap(why)) = shape.count(count, count.cap() + 1) else { panic!("{count:?} not refused") };
            assert!(why.contains(count.name()) && why.contains(&count.cap().to_string()), "{why}");
            assert!(why.contains(count.what()), "{why}");
        }
    }

    #[test]
    fn the_world_is_found_by_export_names() {
        let check = |names: &[&str]| {
            let mut world = World::default();
            for name in names {
                world.export(name);
            }
            world.check()
        };
        assert!(check(&["airlock:tool/metadata@0.2.0", "airlock:tool/handler@0.2.0"]).is_ok());
        assert!(check(&["airlock:tool/metadata@0.1.0", "airlock:tool/handler@0.1.0"]).is_ok());
        assert!(check(&["airlock:tool/metadata@0.2.1", "airlock:tool/handler@0.2.0"]).is_ok());
        // One of each version is not one contract.
        let Err(Refusal::World(why)) = check(&["airlock:tool/metadata@0.1.0", "airlock:tool/handler@0.2.0"]) else {
            panic!("mixed versions accepted")
        };
        assert!(why.contains("airlock:tool/metadata and airlock:tool/handler"), "{why}");
        assert!(check(&["airlock:tool/metadata@0.3.0", "airlock:tool/handler@0.3.0"]).is_ok());
        let Err(Refusal::World(why)) = check(&["airlock:tool/metadata@0.4.0", "airlock:tool/handler@0.4.0"]) else {
            panic!("an unknown version accepted")
        };
        assert!(why.contains("`airlock:tool/metadata@0.4.0`"), "{why}");
        let Err(Refusal::World(why)) = check(&[]) else { panic!("nothing accepted") };
        assert!(why.starts_with("it exports nothing"), "{why}");
        let many: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let Err(Refusal::World(why)) = check(&many) else { panic!("accepted") };
        assert!(why.contains("`f7` and 12 more") && !why.contains("`f8`"), "{why}");
    }

    #[test]
    fn malformed_bytes_are_invalid() {
        let Err(Refusal::Invalid(why)) = check(b"\0asm\x0d\0\x01\0garbage") else { panic!("accepted") };
        assert!(!why.is_empty());
    }

    /// The bundled tools, where `make guests` put them: each fits every cap
    /// with at least a 4× margin. Their counts are printed (the caps' doc
    /// comments record them).
    #[test]
    fn the_bundled_tools_fit_the_caps_with_a_margin() {
        let dir = std::env::var_os("AIRLOCK_GUESTS").map_or_else(
            || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/guests"),
            std::path::PathBuf::from,
        );
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("no bundled tools in {} (run `make guests`): nothing to measure", dir.display());
            return;
        };
        let mut files: Vec<_> =
            entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "wasm")).collect();
        files.sort();
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            let started = std::time::Instant::now();
            let shape = check(&bytes).unwrap_or_else(|why| panic!("{}: {why:?}", file.display()));
            eprintln!("{}: {} bytes in {:?}: {shape}", file.display(), bytes.len(), started.elapsed());
            for count in Count::ALL {
                assert!(
                    shape.get(count).saturating_mul(4) <= count.cap(),
                    "{}: {} {} is within 4× of {}",
                    file.display(),
                    shape.get(count),
                    count.what(),
                    count.name()
                );
            }
        }
    }
}
