//! The pages' files under `web/` are compiled into the binary (`src/web`): rebuild when any of
//! them changes.

fn main() {
    println!("cargo:rerun-if-changed=web");
}
