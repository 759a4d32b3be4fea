//! A table of `airlock.toml` whose keys several owners declare.
//!
//! `[tools.NAME]` is one table as the operator writes it, but its keys are
//! enforced by different layers: the limits by
//! [`limits`](crate::limits), what loads and runs the tool by the runtime,
//! what decides on its calls by the pipeline. Each declares its own keys
//! with [`section!`](crate::section!), and the table is read into all of
//! them at once by [`SharedTable`].
//!
//! Serde's `flatten` would read such a table too, but it buffers the values
//! before handing them on, so a type error in a flattened key loses its
//! line. [`SharedTable`] reads each value straight from the file into the
//! part that declares its key ([`TablePart::read_key`]), so that every error
//! points at the key's own line; a key no part declares is refused with the
//! message a flattened struct gives, "unknown field `KEY`".

use serde::de::{Deserialize, Deserializer, Error, IgnoredAny, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// One owner's keys of a shared table: every raw struct that
/// [`section!`](crate::section!) declares is one.
pub trait TablePart: Default {
    /// Read the value of `key` from `map` into this part if the key is one
    /// of its own (`true`); leave the value unread otherwise (`false`).
    ///
    /// # Errors
    ///
    /// The value does not have the key's type.
    fn read_key<'de, M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<bool, M::Error>;
}

/// Two parts of one table: a key is the first's if it declares it.
impl<A: TablePart, B: TablePart> TablePart for (A, B) {
    fn read_key<'de, M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<bool, M::Error> {
        Ok(self.0.read_key(key, map)? || self.1.read_key(key, map)?)
    }
}

/// Three parts of one table, tried in order.
impl<A: TablePart, B: TablePart, C: TablePart> TablePart for (A, B, C) {
    fn read_key<'de, M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<bool, M::Error> {
        Ok(self.0.read_key(key, map)? || self.1.read_key(key, map)? || self.2.read_key(key, map)?)
    }
}

/// A table read into its parts `P` (a [`TablePart`], or a tuple of them),
/// refusing any key no part declares.
#[derive(Debug, Default)]
pub struct SharedTable<P>(pub P);

impl<'de, P: TablePart> Deserialize<'de> for SharedTable<P> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PartsVisitor(PhantomData))
    }
}

/// Reads a map key by key into the parts `P`.
struct PartsVisitor<P>(PhantomData<P>);

impl<'de, P: TablePart> Visitor<'de> for PartsVisitor<P> {
    type Value = SharedTable<P>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut parts = P::default();
        // As a flattened struct does, the first unknown key is refused once
        // the table is read, after the errors of the keys around it.
        let mut unknown = None;
        while let Some(key) = map.next_key::<String>()? {
            if !parts.read_key(&key, &mut map)? {
                map.next_value::<IgnoredAny>()?;
                unknown.get_or_insert(key);
            }
        }
        match unknown {
            Some(key) => Err(M::Error::custom(format_args!("unknown field `{key}`"))),
            None => Ok(SharedTable(parts)),
        }
    }
}
