//! Integration tests: real snapshots from the real builder, real servers on 127.0.0.1:0,
//! real HTTP. One module per capability; each test reads like the spec row it checks.

mod util;

mod access;
mod endpoints;
mod pagination;
mod protocol;
