//! The snapshot in force and where snapshots come from: the file's identity, the
//! object-store source of a fleet, and the idle-priority thread that reads new files.

pub mod background;
pub mod object_store;
