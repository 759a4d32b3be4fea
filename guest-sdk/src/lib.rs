//! `airlock-guest`: write an Airlock tool as one typed Rust function.
//!
//! A tool is a WebAssembly component of the `airlock:tool` world (see `wit/`
//! in the Airlock repository). This crate hides the component plumbing: you
//! write a function from an argument type (`Deserialize + JsonSchema`) to an
//! output type (`Serialize + JsonSchema`) and export it with
//! [`export_tool!`]. The JSON Schemas of the parameters and of the result are
//! derived from the types, the arguments are parsed for you, and a
//! [`ToolError`] becomes the `tool-error` the model reads.
//!
//! A complete tool:
//!
//! ```
//! use airlock_guest::{ToolError, export_tool};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! /// Arguments of `greet`.
//! #[derive(Deserialize, JsonSchema)]
//! struct Args {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting {
//!     message: String,
//! }
//!
//! fn greet(args: Args) -> Result<Greeting, ToolError> {
//!     if args.name.is_empty() {
//!         return Err(ToolError::new("`name` is empty: pass the name of a person"));
//!     }
//!     Ok(Greeting { message: format!("Hello, {}!", args.name) })
//! }
//!
//! export_tool!(name: "greet", description: "Greets a person by name.", handler: greet);
//! # fn main() {}
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2` (crate type
//! `cdylib`); the `.wasm` file is the component Airlock loads.
//!
//! # Security
//!
//! A tool has no authority of its own: whatever files, environment variables
//! or network it can reach were granted by the operator of the host. The
//! operator, not the tool, also sets its limits (time, fuel, memory, output).

#![deny(missing_docs)]

use std::fmt;

#[doc(hidden)]
pub mod bindings {
    //! Generated bindings of the `airlock:tool` world. Not a stable API.
    #![allow(missing_docs)]
    wit_bindgen::generate!({
        path: "../wit",
        world: "tool",
        pub_export_macro: true,
        export_macro_name: "__export_tool_world",
        default_bindings_module: "airlock_guest::bindings",
    });
}

/// An error the tool reports on purpose. The model reads `message`, so say
/// what went wrong and what would work instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// Text written for the model.
    pub message: String,
    /// Optional machine-readable code, e.g. `not_found`.
    pub code: Option<String>,
}

impl ToolError {
    /// An error with a message and no code.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), code: None }
    }

    /// An error with a message and a machine-readable code.
    pub fn with_code(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { message: message.into(), code: Some(code.into()) }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{code}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Any standard error converts into a [`ToolError`] with its `Display` text,
/// so `?` works on I/O and parse errors inside a handler.
impl<E: std::error::Error> From<E> for ToolError {
    fn from(err: E) -> Self {
        Self::new(err.to_string())
    }
}

/// Helpers for tools that work on the directories an operator granted.
pub mod fs {
    use std::io;
    use std::path::Path;

    /// Whether `path` lies inside a directory this tool can reach. Inside
    /// the sandbox a path under no granted directory fails like a missing
    /// file (wasi-libc finds no preopen for it and answers "not found"), and
    /// one that escapes through `..` or a symbolic link fails with
    /// "permission denied"; whether the nearest existing ancestor can be
    /// reached tells these apart from a file that is merely missing.
    pub fn inside_a_grant(path: &Path) -> bool {
        for ancestor in path.ancestors().skip(1) {
            // The root and the empty path are never granted as such.
            if ancestor.parent().is_none() {
                return false;
            }
            match std::fs::metadata(ancestor) {
                Ok(_) => return true,
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(_) => return false,
            }
        }
        false
    }
}

/// Plumbing used by [`export_tool!`]; not a stable API.
#[doc(hidden)]
pub mod __private {
    use super::ToolError;
    use crate::bindings::exports::airlock::tool::handler::ToolError as WitToolError;
    use schemars::JsonSchema;
    use serde::{Serialize, de::DeserializeOwned};

    /// The JSON Schema of `T` as compact JSON text, without the `$schema`
    /// marker (providers reject or ignore it). `None` when the schema accepts
    /// anything (e.g. `serde_json::Value`), which says nothing useful.
    fn schema_text<T: JsonSchema>() -> Option<String> {
        let schema = schemars::schema_for!(T);
        let mut value = serde_json::to_value(&schema).ok()?;
        let object = value.as_object_mut()?;
        object.remove("$schema");
        serde_json::to_string(&value).ok()
    }

    /// Parameters schema of a handler `fn(A) -> Result<O, ToolError>`.
    pub fn parameters<A: JsonSchema, O, F: Fn(A) -> Result<O, ToolError>>(_: &F) -> String {
        schema_text::<A>().unwrap_or_else(|| r#"{"type":"object"}"#.to_owned())
    }

    /// Output schema of a handler `fn(A) -> Result<O, ToolError>`.
    pub fn output<A, O: JsonSchema, F: Fn(A) -> Result<O, ToolError>>(_: &F) -> Option<String> {
        schema_text::<O>()
    }

    /// Parse the arguments, run the handler, serialize its output.
    pub fn call<A, O, F>(handler: &F, arguments: &str) -> Result<String, WitToolError>
    where
        A: DeserializeOwned,
        O: Serialize,
        F: Fn(A) -> Result<O, ToolError>,
    {
        let args: A = serde_json::from_str(arguments).map_err(|err| WitToolError {
            message: format!("the arguments do not match the parameters schema: {err}"),
            code: Some("invalid_arguments".to_owned()),
        })?;
        let output = handler(args).map_err(|err| WitToolError { message: err.message, code: err.code })?;
        serde_json::to_string(&output).map_err(|err| WitToolError {
            message: format!("the tool could not serialize its result: {err}"),
            code: Some("serialize".to_owned()),
        })
    }
}

/// Export a typed handler as this component's tool.
///
/// ```text
/// export_tool!(name: "echo", description: "…", handler: echo);
/// ```
///
/// `handler` is a function `fn(Args) -> Result<Output, ToolError>` where
/// `Args: Deserialize + JsonSchema` and `Output: Serialize + JsonSchema`.
/// Use it once per crate.
#[macro_export]
macro_rules! export_tool {
    (name: $name:expr, description: $description:expr, handler: $handler:path $(,)?) => {
        #[doc(hidden)]
        struct __AirlockTool;

        impl $crate::bindings::exports::airlock::tool::metadata::Guest for __AirlockTool {
            fn name() -> ::std::string::String {
                ::std::string::String::from($name)
            }
            fn description() -> ::std::string::String {
                ::std::string::String::from($description)
            }
            fn parameters() -> ::std::string::String {
                $crate::__private::parameters(&$handler)
            }
            fn output() -> ::std::option::Option<::std::string::String> {
                $crate::__private::output(&$handler)
            }
        }

        impl $crate::bindings::exports::airlock::tool::handler::Guest for __AirlockTool {
            fn call(
                arguments: ::std::string::String,
            ) -> ::std::result::Result<
                ::std::string::String,
                $crate::bindings::exports::airlock::tool::handler::ToolError,
            > {
                $crate::__private::call(&$handler, &arguments)
            }
        }

        // Only a wasm build exports the component symbols; native builds
        // (unit tests of a tool's logic) would fail to link their names.
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_tool_world!(__AirlockTool with_types_in $crate::bindings);
    };
}
