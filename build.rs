//! The pages' files under `web/` and the docs under `docs/` are compiled into the binary
//! (`src/web`): rebuild when any of them changes.

fn main() {
    println!("cargo:rerun-if-changed=web");
    println!("cargo:rerun-if-changed=docs");
}
