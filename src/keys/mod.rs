//! API keys: how a key is kept (`hash`), the keys file (`file`), the commands that change it
//! (`edit`), the keys as the server looks them up (`ring`), and how a keys file is put in force
//! (`in_force`). `hash` is the leaf; `edit` sits above `file` and `ring`, which checks every
//! change before it is written.

pub mod edit;
pub mod file;
pub mod hash;
pub mod in_force;
pub mod ring;
