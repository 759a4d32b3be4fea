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
//! # The schemas
//!
//! The `parameters` schema is derived from the arguments type in the one
//! shape every client converter takes ([`schema`] has the rules): every
//! subschema written in place (no `$ref` into `$defs`, except where a type
//! contains itself), every optional member (an `Option<T>` or a
//! `#[serde(default)]` field) also accepting `null`, which the handler
//! reads as "left out", and no `default` keyword (a default is restated in
//! the description unless the doc comment already names it). Check what a
//! tool declares with [`schema::parameters`] in its unit tests.
//!
//! # Who the call is for
//!
//! A handler may take a second argument, the [`Caller`]: the principal the
//! host authenticated, the operator's attributes and roles of that
//! principal (from the host's Cedar entities file), the call id and the
//! session id. None of it comes from the model, so a tool can decide from
//! it which data the call may reach:
//!
//! ```
//! use airlock_guest::{Caller, ToolError, export_tool};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Args {
//!     account_id: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Balance {
//!     cents: u64,
//! }
//!
//! fn get_balance(args: Args, caller: Caller) -> Result<Balance, ToolError> {
//!     if !caller.strings("accounts").any(|own| own == args.account_id) {
//!         return Err(ToolError::with_code("not_yours", "that account is not one of the caller's"));
//!     }
//!     Ok(Balance { cents: 100 })
//! }
//!
//! export_tool!(name: "get_balance", description: "Balance of one of your accounts.", handler: get_balance);
//! # fn main() {}
//! ```
//!
//! # Pictures, files, progress and log lines
//!
//! Besides its JSON result, a call may return content blocks (a PNG, a
//! sound, an SVG file, a link), attached while it runs with
//! [`content::attach`]; report how far it has come with
//! [`progress::report`]; and write lines for the operator's log with
//! [`log`]. None of it changes the handler's signature:
//!
//! ```
//! use airlock_guest::{ToolError, content::{self, Content}, export_tool, progress};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Args {
//!     /// How many dots to draw.
//!     dots: u32,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Drawn {
//!     dots: u32,
//! }
//!
//! fn draw(args: Args) -> Result<Drawn, ToolError> {
//!     let mut svg = String::from(r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="10">"#);
//!     for i in 0..args.dots {
//!         svg.push_str(&format!(r#"<circle cx="{}" cy="5" r="2"/>"#, 5 + i * 10));
//!         progress::report(f64::from(i + 1), Some(f64::from(args.dots)), None);
//!     }
//!     svg.push_str("</svg>");
//!     content::attach(Content::embedded_text("airlock:dots.svg", "image/svg+xml", svg))?;
//!     Ok(Drawn { dots: args.dots })
//! }
//!
//! export_tool!(name: "draw", description: "Draws dots as an SVG file.", handler: draw);
//! # fn main() {}
//! ```
//!
//! Components built with this crate target the contract
//! `airlock:tool@0.3.0`; the host reads the caller only for handlers that
//! take it. In a native build (a tool's unit tests) nothing reaches a
//! host: attached blocks, progress and log lines are kept for the test to
//! read ([`content::take_attached`], [`progress::take_reports`],
//! [`log::take_lines`]).
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

/// Who the current call acts for, as the host knows it (the
/// `airlock:tool/caller` import). Nothing in it comes from the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// The authenticated principal, e.g. `alice`.
    pub principal: String,
    /// The principal's attributes from the operator's entities file, by
    /// name, in Cedar's JSON form (a set is an array, a record an object).
    /// Empty when the file does not describe the principal.
    pub attributes: std::collections::BTreeMap<String, serde_json::Value>,
    /// Entities the principal is in, as `(type, id)`, e.g.
    /// `("Airlock::Role", "customer")`.
    pub parents: Vec<(String, String)>,
    /// The front end's id of this call (empty when it gave none).
    pub call_id: String,
    /// The session the call runs in, for a tool the operator runs with
    /// sessions.
    pub session_id: Option<String>,
}

impl Caller {
    /// The caller of the call being served, read from the host.
    #[cfg(target_arch = "wasm32")]
    pub fn current() -> Self {
        let info = bindings::airlock::tool::caller::get();
        Self {
            principal: info.principal,
            attributes: info
                .attributes
                .into_iter()
                .map(|a| {
                    // The host sends JSON text; a value that would not parse
                    // is kept as a string rather than lost.
                    let value = serde_json::from_str(&a.value).unwrap_or(serde_json::Value::String(a.value));
                    (a.name, value)
                })
                .collect(),
            parents: info.parents.into_iter().map(|p| (p.entity_type, p.id)).collect(),
            call_id: info.call_id,
            session_id: info.session_id,
        }
    }

    /// Outside WebAssembly (unit tests of a tool's logic) there is no host:
    /// an empty caller.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn current() -> Self {
        Self {
            principal: String::new(),
            attributes: Default::default(),
            parents: Vec::new(),
            call_id: String::new(),
            session_id: None,
        }
    }

    /// The attribute `name`, if the principal has it.
    pub fn attribute(&self, name: &str) -> Option<&serde_json::Value> {
        self.attributes.get(name)
    }

    /// The string elements of attribute `name` (a string is one element, a
    /// set of strings many); nothing when it is missing or holds no
    /// strings.
    pub fn strings<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a str> + 'a {
        let values: Vec<&'a str> = match self.attributes.get(name) {
            Some(serde_json::Value::String(text)) => vec![text.as_str()],
            Some(serde_json::Value::Array(items)) => items.iter().filter_map(serde_json::Value::as_str).collect(),
            _ => Vec::new(),
        };
        values.into_iter()
    }

    /// Whether the principal is in the role `Airlock::Role::"<role>"`.
    pub fn has_role(&self, role: &str) -> bool {
        self.parents.iter().any(|(ty, id)| ty == "Airlock::Role" && id == role)
    }
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
    ///
    /// The Airlock host shows a code only when it is 1 to 64 characters of
    /// `a-z`, `0-9`, `_`, `.` and `-` (e.g. `not_found`); any other code is
    /// shown as `invalid_code`. The model reads `tool error (CODE): message`.
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

pub mod content;
pub mod log;
pub mod progress;
pub mod schema;

/// Plumbing used by [`export_tool!`]; not a stable API.
#[doc(hidden)]
pub mod __private {
    use super::{Caller, ToolError};
    use crate::bindings::exports::airlock::tool::handler::ToolError as WitToolError;
    use schemars::JsonSchema;
    use serde::{Serialize, de::DeserializeOwned};

    /// A schema as compact JSON text. `None` when it accepts anything (e.g.
    /// `serde_json::Value`), which says nothing useful.
    fn schema_text(schema: serde_json::Value) -> Option<String> {
        if schema.as_object().is_none_or(|o| o.keys().all(|k| k == "title" || k == "description")) {
            return None;
        }
        serde_json::to_string(&schema).ok()
    }

    /// A handler of either form: `fn(A) -> Result<O, ToolError>` or
    /// `fn(A, Caller) -> Result<O, ToolError>`. `Form` tells the two apart
    /// (a function has exactly one arity), so `export_tool!` takes both.
    pub trait Handler<Form> {
        /// The arguments type.
        type Args;
        /// The output type.
        type Output;
        /// Run the handler; the caller is read from the host only for the
        /// two-argument form.
        fn run(&self, args: Self::Args) -> Result<Self::Output, ToolError>;
    }

    impl<A, O, F: Fn(A) -> Result<O, ToolError>> Handler<fn(A) -> O> for F {
        type Args = A;
        type Output = O;
        fn run(&self, args: A) -> Result<O, ToolError> {
            self(args)
        }
    }

    impl<A, O, F: Fn(A, Caller) -> Result<O, ToolError>> Handler<fn(A, Caller) -> O> for F {
        type Args = A;
        type Output = O;
        fn run(&self, args: A) -> Result<O, ToolError> {
            self(args, Caller::current())
        }
    }

    /// Parameters schema of a handler.
    pub fn parameters<M, H: Handler<M>>(_: &H) -> String
    where
        H::Args: JsonSchema,
    {
        schema_text(crate::schema::parameters::<H::Args>()).unwrap_or_else(|| r#"{"type":"object"}"#.to_owned())
    }

    /// Output schema of a handler.
    pub fn output<M, H: Handler<M>>(_: &H) -> Option<String>
    where
        H::Output: JsonSchema,
    {
        schema_text(crate::schema::output::<H::Output>())
    }

    /// Parse the arguments (a `null` for an optional member read as left
    /// out, see [`crate::schema`]), run the handler, serialize its output.
    pub fn call<M, H>(handler: &H, arguments: &str) -> Result<String, WitToolError>
    where
        H: Handler<M>,
        H::Args: DeserializeOwned + JsonSchema,
        H::Output: Serialize,
    {
        let invalid = |err: serde_json::Error| WitToolError {
            message: format!("the arguments do not match the parameters schema: {err}"),
            code: Some("invalid_arguments".to_owned()),
        };
        // Only arguments with a `null` somewhere need the schema: text
        // without one is read directly.
        let args: H::Args = if arguments.contains("null") {
            let mut value: serde_json::Value = serde_json::from_str(arguments).map_err(invalid)?;
            crate::schema::drop_absent_nulls(&crate::schema::parameters::<H::Args>(), &mut value);
            serde_json::from_value(value).map_err(invalid)?
        } else {
            serde_json::from_str(arguments).map_err(invalid)?
        };
        let output = handler.run(args).map_err(|err| WitToolError { message: err.message, code: err.code })?;
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
/// `handler` is a function `fn(Args) -> Result<Output, ToolError>`, or
/// `fn(Args, Caller) -> Result<Output, ToolError>` to learn who the call is
/// for, where `Args: Deserialize + JsonSchema` and
/// `Output: Serialize + JsonSchema`.
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
