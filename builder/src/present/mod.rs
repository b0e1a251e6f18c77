//! What people read rather than parse: the pages the builder renders into the snapshot.

pub mod pages;
