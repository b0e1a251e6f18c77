//! Regenerates `sample/demo-keys.toml`: one demo key per tier, plus a revoked one.
//! The keys are public (README, "Demo keys") and for the bundled sample only.
//!
//! Usage: cargo run --example demo_keys

use marks::keys::edit::add_known;
use marks::keys::file::{KeyEntry, KeyStatus};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = marks::cli::commands::demo_keys_file();
    let _ = std::fs::remove_file(&path);
    let keys = [
        ("demo-free", "free", KeyStatus::Active),
        ("demo-research", "research", KeyStatus::Active),
        ("demo-pro", "pro", KeyStatus::Active),
        ("demo-business", "business", KeyStatus::Active),
        ("demo-enterprise", "enterprise", KeyStatus::Active),
        ("demo-revoked", "enterprise", KeyStatus::Revoked),
    ];
    for (key_id, tier, status) in keys {
        let key = format!("vmk_{}", key_id.replace('-', "_"));
        let entry = KeyEntry {
            key_id: key_id.to_string(),
            tenant: "demo".to_string(),
            tier: tier.to_string(),
            status,
            created: "2026-11-22".to_string(),
            hash: String::new(),
            rate_per_min: None,
        };
        add_known(&path, &key, entry)?;
        println!("{key_id:<16} {tier:<11} {key}");
    }
    Ok(())
}
