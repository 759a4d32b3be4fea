//! A section of `airlock.toml`, declared once.
//!
//! Each key of every section is one entry of a [`section!`](crate::section!)
//! declaration, written beside the code that enforces it: the key as the
//! operator writes it, its type, default, accepted range and unit, whether a
//! reload applies it or it is fixed until a restart, and one doc line. From
//! that entry come the raw serde struct that reads the section (refusing
//! unknown keys), the checked value and its range error (one helper,
//! [`check_range`](crate::key_doc::check_range), for every key), the row `airlock config` shows and a
//! reload compares ([`Section::values`]), the section's lines in
//! `airlock.example.toml` ([`Section::example`]) and its table in the
//! operator guide ([`Section::table`]). As rust-analyzer does with its
//! `config_data!`: adding a key is one declaration and the code that uses
//! it.
//!
//! Keys whose values are structured (lists of tables, credentials, grants,
//! templates) are declared as `hand` keys: they appear in the table and in
//! every generated document like any other key, and the owner parses their
//! value by hand.

use crate::key_doc::{Applies, KeyDoc, Unit, Value};
use std::path::PathBuf;
use std::time::Duration;

/// A type a key of a [`section!`](crate::section!) group holds: how serde
/// reads it, how it is checked and converted, and how it is shown.
pub trait Setting: Sized {
    /// What serde reads from the file.
    type Raw: Clone;
    /// What the guide says is accepted, for a key without a range.
    const ACCEPTS: &'static str;
    /// The value as a number in the operator's unit, for its range check
    /// (`None` for what is not a number).
    fn number(raw: &Self::Raw) -> Option<u64>;
    /// The value the host holds for what the operator wrote (already in
    /// range).
    fn from_raw(raw: Self::Raw, unit: Unit) -> Self;
    /// The value in the operator's unit (`None`: not set).
    fn show(&self, unit: Unit) -> Option<Value>;
    /// The value as a number in the operator's unit, for the range check of
    /// a value the host holds (`None` for what is not a number, or not set).
    fn operator(&self, unit: Unit) -> Option<u64> {
        match self.show(unit) {
            Some(Value::Int(number)) => Some(number),
            _ => None,
        }
    }
}

macro_rules! integer_setting {
    ($($int:ty),*) => {$(
        impl Setting for $int {
            type Raw = u64;
            const ACCEPTS: &'static str = "an integer";
            fn number(raw: &u64) -> Option<u64> {
                Some(*raw)
            }
            fn from_raw(raw: u64, unit: Unit) -> Self {
                // In range before it is converted: a value this large was
                // refused already, so saturating loses nothing.
                <$int>::try_from(raw.saturating_mul(unit.scale())).unwrap_or(<$int>::MAX)
            }
            fn show(&self, unit: Unit) -> Option<Value> {
                Some(Value::Int(u64::try_from(*self).unwrap_or(u64::MAX) / unit.scale()))
            }
        }
    )*};
}

integer_setting!(u8, u32, u64, usize);

impl Setting for Duration {
    type Raw = u64;
    const ACCEPTS: &'static str = "an integer";
    fn number(raw: &u64) -> Option<u64> {
        Some(*raw)
    }
    fn from_raw(raw: u64, unit: Unit) -> Self {
        match unit {
            Unit::Millis => Duration::from_millis(raw),
            _ => Duration::from_secs(raw),
        }
    }
    fn show(&self, unit: Unit) -> Option<Value> {
        let number = match unit {
            Unit::Millis => u64::try_from(self.as_millis()).unwrap_or(u64::MAX),
            _ => self.as_secs(),
        };
        Some(Value::Int(number))
    }
}

/// A number that may be left unset (it then has no value, or one the host
/// derives).
impl<T: Setting<Raw = u64>> Setting for Option<T> {
    type Raw = u64;
    const ACCEPTS: &'static str = "an integer";
    fn number(raw: &u64) -> Option<u64> {
        Some(*raw)
    }
    fn from_raw(raw: u64, unit: Unit) -> Self {
        Some(T::from_raw(raw, unit))
    }
    fn show(&self, unit: Unit) -> Option<Value> {
        self.as_ref().and_then(|value| value.show(unit))
    }
}

impl Setting for bool {
    type Raw = bool;
    const ACCEPTS: &'static str = "`true` or `false`";
    fn number(_: &bool) -> Option<u64> {
        None
    }
    fn from_raw(raw: bool, _: Unit) -> Self {
        raw
    }
    fn show(&self, _: Unit) -> Option<Value> {
        Some(Value::Bool(*self))
    }
}

impl Setting for String {
    type Raw = String;
    const ACCEPTS: &'static str = "a string";
    fn number(_: &String) -> Option<u64> {
        None
    }
    fn from_raw(raw: String, _: Unit) -> Self {
        raw
    }
    fn show(&self, _: Unit) -> Option<Value> {
        Some(Value::Text(self.clone()))
    }
}

impl Setting for Vec<String> {
    type Raw = Vec<String>;
    const ACCEPTS: &'static str = "an array of strings";
    fn number(_: &Vec<String>) -> Option<u64> {
        None
    }
    fn from_raw(raw: Vec<String>, _: Unit) -> Self {
        raw
    }
    fn show(&self, _: Unit) -> Option<Value> {
        Some(Value::List(self.clone()))
    }
}

impl Setting for PathBuf {
    type Raw = PathBuf;
    const ACCEPTS: &'static str = "a path";
    fn number(_: &PathBuf) -> Option<u64> {
        None
    }
    fn from_raw(raw: PathBuf, _: Unit) -> Self {
        raw
    }
    fn show(&self, _: Unit) -> Option<Value> {
        Some(Value::path(self))
    }
}

/// One key of a section: what the guide says of it, and how its value is
/// read from the settings `S` the section is checked into.
pub struct Key<S: 'static> {
    /// What the guide says of it.
    pub doc: KeyDoc,
    /// Its value in `S` (`None`: not set, or a secret).
    pub show: fn(&S) -> Option<Value>,
    /// What a restart check compares besides the value shown, when that
    /// cannot tell a change (a secret, a key file's contents): never shown.
    pub identity: fn(&S) -> Option<String>,
}

/// A section of `airlock.toml`: its name and every key it accepts, in the
/// order `airlock config` and the guide show them.
pub struct Section<S: 'static> {
    /// The section's name as the operator writes it between brackets
    /// (`http.jwt`, `tools.NAME`), empty for the top level.
    pub name: &'static str,
    /// The file the section is declared in (named by the generated
    /// documents).
    pub source: &'static str,
    /// Every key.
    pub keys: &'static [Key<S>],
}

/// One key's value in the settings in force, as a reload compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// What the guide says of the key.
    pub name: &'static str,
    /// When a change to it takes effect.
    pub applies: Applies,
    /// Its value (`None`: not set, or a secret).
    pub value: Option<Value>,
    /// What else tells a change (a secret's own text, a key file's
    /// contents); never shown.
    pub identity: Option<String>,
}

impl<S: 'static> Section<S> {
    /// The section as errors name it: `[http.jwt]`, or nothing for the top
    /// level.
    pub fn scope(&self) -> String {
        if self.name.is_empty() { String::new() } else { format!("[{}]", self.name) }
    }

    /// What the guide says of each key.
    pub fn docs(&self) -> Vec<KeyDoc> {
        self.keys.iter().map(|key| key.doc).collect()
    }

    /// The key named `name`.
    pub fn key(&self, name: &str) -> Option<&Key<S>> {
        self.keys.iter().find(|key| key.doc.name == name)
    }

    /// Every key's value in `settings`, in order; all unset when the
    /// section is absent (`None`).
    pub fn values(&self, settings: Option<&S>) -> Vec<Shown> {
        self.keys
            .iter()
            .map(|key| Shown {
                name: key.doc.name,
                applies: key.doc.applies,
                value: settings.and_then(|s| (key.show)(s)),
                identity: settings.and_then(|s| (key.identity)(s)),
            })
            .collect()
    }

    /// The section in `airlock.example.toml`: its header (commented out
    /// unless a key is set), then every key, set or commented out, with what
    /// it does, what it accepts and whether it needs a restart.
    pub fn example(&self) -> String {
        crate::generated::example(self.name, &self.docs())
    }

    /// The section's table of keys in the operator guide.
    pub fn table(&self) -> String {
        crate::generated::table(&self.docs())
    }

    /// Keep the section's generated documents current (a test): its part of
    /// `airlock.example.toml`, its table in `page` (a file of the book,
    /// relative to the workspace) and, for a section with keys that have a
    /// range, the table of those caps in the limits reference
    /// (`book/src/operator/limits.md`).
    ///
    /// # Errors
    ///
    /// As [`crate::generated::ensure`]: a stale part (now rewritten), or a
    /// file without its markers.
    pub fn ensure_documents(&self, page: &str) -> Result<(), String> {
        crate::generated::ensure_documents(self.name, self.source, &self.docs(), page)
    }
}

/// Declares one section of `airlock.toml` once; see the [module
/// documentation](crate::section).
///
/// ```text
/// section! {
///     /// The keys of `[serve]`.
///     pub const SERVE: Section<ServeSettings> = "serve";
///     /// `[serve]` as written.
///     pub struct RawServe { /* raw-only fields: subsections, `NAME: TYPE,` */ }
///     hand {
///         /// what the key does, in one line
///         KEY: RAW_TYPE, APPLIES, accepts "what", unset "what an unset one means"
///             [, show |s: &Owner| …] [, identity |s: &Owner| …] [, example "TOML"] [, set "TOML"];
///     }
///     /// How `airlock serve` behaves as a service.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     group pub struct ServeSettings: Default (RawServeKeys) at () {
///         /* extra (non-key) fields: `pub NAME: TYPE = INITIAL,` … */ ;
///         /// on SIGTERM, how long calls in flight may take to finish
///         shutdown_grace_secs => shutdown_grace: Duration = DEFAULT, Reload,
///             [range UNIT MIN..=MAX] [, unset "…"] [, example "TOML"] [, set "TOML" | set default];
///     }
/// }
/// ```
///
/// It makes the raw struct (every key, `deny_unknown_fields`) and the table
/// (`Section`, hand keys first, then each group's), and for each group the
/// checked struct (one field per key, holding the checked value, then the
/// extra fields), a raw struct of the group's keys alone (with a `From` of
/// the section's), `defaults()`, `from_keys(raw, base, scope)` (every key
/// set checked against its range as written, the others kept from `base`)
/// and `check_ranges(scope)`; `: Default` adds a `Default` that is
/// /// `defaults()`. `at (FIELD)` says where the group sits in the section's
/// settings type (`at ()`: it is that type). APPLIES is `Reload`,
/// `Restart` or `RestartWhileShipped`; UNIT a [`Unit`]. In
/// `airlock.example.toml` a key is commented out at its default, or at its
/// `example`; `set` writes it set. Both raw structs are
/// [`TablePart`](crate::shared_table::TablePart)s too, so that a table whose
/// keys several owners declare (`[tools.NAME]`) reads into each owner's;
/// there an extra field of the raw struct is a subsection read whole under
/// its name, never a flattened one. The crate that invokes it depends on
/// `serde` (the raw structs derive `serde::Deserialize`).
#[macro_export]
macro_rules! section {
    (
        $(#[doc = $tdoc:literal])*
        $tvis:vis const $TABLE:ident : Section<$Owner:ty> = $name:literal;
        $(#[doc = $rdoc:literal])*
        $rvis:vis struct $Raw:ident { $( $(#[$sattr:meta])* $sfield:ident : $sty:ty ),* $(,)? }
        hand {
            $(
                $(#[doc = $hdoc:literal])+
                $hkey:ident : $hraw:ty, $happlies:ident, accepts $haccepts:literal, unset $hunset:literal
                    $(, show $hshow:expr)? $(, identity $hidentity:expr)?
                    $(, example $hexample:literal)? $(, set $hset:tt)? ;
            )*
        }
        $(
            $(#[$gattr:meta])*
            group $gvis:vis struct $Group:ident $(: $GDefault:ident)? ($GRaw:ident) at $path:tt {
                $( $(#[doc = $edoc:literal])* $evis:vis $efield:ident : $ety:ty = $einit:expr ),* ;
                $(
                    $(#[doc = $kdoc:literal])+
                    $key:ident => $field:ident : $ty:ty = $default:expr, $applies:ident
                        $(, range $unit:ident $range:expr)? $(, unset $unset:literal)?
                        $(, example $example:literal)? $(, set $set:tt)? ;
                )*
            }
        )*
    ) => {
        $(#[doc = $rdoc])*
        #[derive(Debug, Default, ::serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        $rvis struct $Raw {
            $( $hkey: $hraw, )*
            $( $( $key: ::core::option::Option<<$ty as $crate::section::Setting>::Raw>, )* )*
            $( $(#[$sattr])* $sfield: $sty, )*
        }

        impl $crate::shared_table::TablePart for $Raw {
            // A section with no key but its subsections reaches the end
            // through no arm.
            #[allow(unreachable_code)]
            fn read_key<'de, M: ::serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut M,
            ) -> ::core::result::Result<bool, M::Error> {
                match key {
                    $( stringify!($hkey) => self.$hkey = map.next_value()?, )*
                    $( $( stringify!($key) => self.$key = map.next_value()?, )* )*
                    $( stringify!($sfield) => self.$sfield = map.next_value()?, )*
                    _ => return ::core::result::Result::Ok(false),
                }
                ::core::result::Result::Ok(true)
            }
        }

        $(
            $(#[$gattr])*
            $gvis struct $Group {
                $( $(#[doc = $edoc])* $evis $efield: $ety, )*
                $( #[doc = concat!($($kdoc),+)] pub $field: $ty, )*
            }

            #[doc = concat!("The keys of [`", stringify!($Group), "`] as written.")]
            #[derive(Debug, Default, Clone, ::serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            $gvis struct $GRaw {
                $( $key: ::core::option::Option<<$ty as $crate::section::Setting>::Raw>, )*
            }

            impl $crate::shared_table::TablePart for $GRaw {
                #[allow(unreachable_code)]
                fn read_key<'de, M: ::serde::de::MapAccess<'de>>(
                    &mut self,
                    key: &str,
                    map: &mut M,
                ) -> ::core::result::Result<bool, M::Error> {
                    match key {
                        $( stringify!($key) => self.$key = map.next_value()?, )*
                        _ => return ::core::result::Result::Ok(false),
                    }
                    ::core::result::Result::Ok(true)
                }
            }

            impl ::core::convert::From<&$Raw> for $GRaw {
                fn from(raw: &$Raw) -> Self {
                    Self { $( $key: raw.$key.clone(), )* }
                }
            }

            #[allow(dead_code)]
            impl $Group {
                /// Every key at its default.
                pub(crate) fn defaults() -> Self {
                    Self { $( $efield: $einit, )* $( $field: $default, )* }
                }

                /// `base` with the keys set in `raw` over it, each checked
                /// against its range as written; errors name the key after
                /// `scope`.
                pub(crate) fn from_keys(raw: &$GRaw, base: &Self, scope: &str) -> ::core::result::Result<Self, String> {
                    let mut checked = base.clone();
                    $(
                        if let ::core::option::Option::Some(value) = &raw.$key {
                            if let ::core::option::Option::Some(number) = <$ty as $crate::section::Setting>::number(value) {
                                $crate::__section_key_doc!($Group, $key, $field, $ty, [$($kdoc),+], $applies,
                                    [$($unit $range)?], [$($unset)?], [$($example)?], [$($set)?])
                                    .check(scope, number)?;
                            }
                            checked.$field = <$ty as $crate::section::Setting>::from_raw(
                                value.clone(),
                                $crate::__section_unit!([$($unit)?]),
                            );
                        }
                    )*
                    ::core::result::Result::Ok(checked)
                }

                /// Check every key's value against its range, in the
                /// operator's unit; errors name the key after `scope`.
                pub(crate) fn check_ranges(&self, scope: &str) -> ::core::result::Result<(), String> {
                    $(
                        if let ::core::option::Option::Some(number) = <$ty as $crate::section::Setting>::operator(
                            &self.$field,
                            $crate::__section_unit!([$($unit)?]),
                        ) {
                            $crate::__section_key_doc!($Group, $key, $field, $ty, [$($kdoc),+], $applies,
                                [$($unit $range)?], [$($unset)?], [$($example)?], [$($set)?])
                                .check(scope, number)?;
                        }
                    )*
                    ::core::result::Result::Ok(())
                }
            }

            $( impl $GDefault for $Group {
                fn default() -> Self {
                    Self::defaults()
                }
            } )?
        )*

        $(#[doc = $tdoc])*
        $tvis const $TABLE: $crate::section::Section<$Owner> = $crate::section::Section {
            name: $name,
            source: file!(),
            keys: &[
                $( $crate::section::Key {
                    doc: $crate::key_doc::KeyDoc {
                        name: stringify!($hkey),
                        doc: concat!($($hdoc),+),
                        accepts: $crate::key_doc::Accepts::Text($haccepts),
                        unset: $crate::key_doc::Unset::Text($hunset),
                        applies: $crate::key_doc::Applies::$happlies,
                        example: $crate::__section_example!([$($hexample)?], [$($hset)?]),
                    },
                    show: $crate::__section_or!([$($hshow)?], |_: &$Owner| ::core::option::Option::None),
                    identity: $crate::__section_or!([$($hidentity)?], |_: &$Owner| ::core::option::Option::None),
                }, )*
                $( $( $crate::section::Key {
                    doc: $crate::__section_key_doc!($Group, $key, $field, $ty, [$($kdoc),+], $applies,
                        [$($unit $range)?], [$($unset)?], [$($example)?], [$($set)?]),
                    show: |settings: &$Owner| <$ty as $crate::section::Setting>::show(
                        &$crate::__section_at!(settings, $path).$field,
                        $crate::__section_unit!([$($unit)?]),
                    ),
                    identity: |_: &$Owner| ::core::option::Option::None,
                }, )* )*
            ],
        };
    };
}

/// The [`KeyDoc`] of a group key (a part of [`section!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __section_key_doc {
    ($Group:ident, $key:ident, $field:ident, $ty:ty, [$($doc:literal),+], $applies:ident,
     [$($unit:ident $range:expr)?], [$($unset:literal)?], [$($example:literal)?], [$($set:tt)?]) => {
        $crate::key_doc::KeyDoc {
            name: stringify!($key),
            doc: concat!($($doc),+),
            accepts: $crate::__section_accepts!($ty, [$($unit $range)?]),
            unset: $crate::__section_unset!([$($unset)?], || <$ty as $crate::section::Setting>::show(
                &$Group::defaults().$field,
                $crate::__section_unit!([$($unit)?]),
            )),
            applies: $crate::key_doc::Applies::$applies,
            example: $crate::__section_example!([$($example)?], [$($set)?]),
        }
    };
}

/// What a group key accepts (a part of [`section!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __section_accepts {
    ($ty:ty, []) => {
        $crate::key_doc::Accepts::Text(<$ty as $crate::section::Setting>::ACCEPTS)
    };
    ($ty:ty, [$unit:ident $range:expr]) => {
        $crate::key_doc::Accepts::Range {
            min: *::core::ops::RangeInclusive::<u64>::start(&$range),
            max: *::core::ops::RangeInclusive::<u64>::end(&$range),
            unit: $crate::key_doc::Unit::$unit,
        }
    };
}

/// The unit of a group key, a count unless a range names one (a part of
/// [`section!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __section_unit {
    ([]) => {
        $crate::key_doc::Unit::Count
    };
    ([$unit:ident]) => {
        $crate::key_doc::Unit::$unit
    };
}

/// What an unset group key is (a part of [`section!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __section_unset {
    ([], $default:expr) => {
        $crate::key_doc::Unset::Value($default)
    };
    ([$text:literal], $default:expr) => {
        $crate::key_doc::Unset::Text($text)
    };
}

/// What the example configuration writes for a key (a part of
/// [`section!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __section_example {
    ([], []) => {
        $crate::key_doc::Example::Default
    };
    ([], [default]) => {
        $crate::key_doc::Example::SetDefault
    };
    ([$example:literal], []) => {
        $crate::key_doc::Example::Commented($example)
    };
    ([], [$set:literal]) => {
        $crate::key_doc::Example::Set($set)
    };
}

/// The first expression given, else the second (a part of [`section!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __section_or {
    ([$given:expr], $otherwise:expr) => {
        $given
    };
    ([], $otherwise:expr) => {
        $otherwise
    };
}

/// Where a group sits in the section's settings (a part of [`section!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __section_at {
    ($settings:ident, ()) => {
        $settings
    };
    ($settings:ident, ($field:ident)) => {
        $settings.$field
    };
}
