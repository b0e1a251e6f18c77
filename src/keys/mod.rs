//! API keys: how a key is kept (`hash`), the keys file (`file`), the commands that change it
//! (`edit`), and the keys in force as the server looks them up (`ring`). `hash` is the leaf;
//! `edit` sits above `file` and `ring`, which checks every change before it is written.

pub mod edit;
pub mod file;
pub mod hash;
pub mod ring;
