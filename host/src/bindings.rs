//! The host's one `bindgen!` of the `airlock:tool` world. Generated types
//! stay private to the crate: the rest of the host speaks its own types.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "tool",
    exports: { default: async },
});
