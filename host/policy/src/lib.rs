//! What is decided about a call and what is kept of it, outside the tool:
//! the operator's Cedar policy with its entities and the decision it gives
//! a call (allow, deny or ask, [`authorize`]), the confirmation a person
//! gives when it asks ([`confirm`]) and the card they read ([`card`]), what
//! a principal's name may be ([`principal`]), and the hash-chained audit log
//! every call leaves a record in, with its verification and its shipping to
//! PostgreSQL ([`audit`]).

#![deny(missing_docs)]

pub mod audit;
pub mod authorize;
pub mod card;
pub mod confirm;
pub mod principal;
