//! API keys: the keys file operators edit (`file`) and the keys in force as the server
//! looks them up (`ring`).

pub mod file;
pub mod ring;
