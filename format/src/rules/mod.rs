//! The rules the builder and the server share about the data, each defined once:
//! - [`tiers`]: the access table (tiers, scopes, budgets, the usage body);
//! - [`signatures`]: key thumbprints, the JWKS, and checking a signed resolution record;
//! - [`search`]: how a query finds a company by name, alias or slug;
//! - [`table`]: the CSV form of the data routes (columns, cells safe in a spreadsheet);
//! - [`day`], [`dated`]: the calendar day, and the records of a date range inside a stored
//!   series, by binary search;
//! - [`names`]: the slug and name grammar;
//! - [`weights`]: how an index weighs its constituents (the cap); [`constituents`]: an index's
//!   constituents on a day, as both sides render them.

pub mod constituents;
pub mod dated;
pub mod day;
pub mod names;
pub mod search;
pub mod signatures;
pub mod table;
pub mod tiers;
pub mod weights;
