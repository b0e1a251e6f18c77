//! Request budgets: the per-key token buckets of one process (`local`) and the store that
//! replicas share (`shared`, Redis or Valkey).

pub mod local;
pub mod shared;
