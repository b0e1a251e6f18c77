//! Request budgets: the per-key token buckets of one process (`local`) and the store that
//! replicas share (`shared`, Redis or Valkey), and the server's budget of HTTP/2 streams
//! (`streams`).

pub mod local;
pub mod shared;
pub mod streams;
