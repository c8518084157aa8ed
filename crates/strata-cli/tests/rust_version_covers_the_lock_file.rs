//! The Rust version the workspace declares (`rust-version`, which the
//! README states) is at least every locked package's own `rust-version`, so
//! a newcomer with that toolchain can build what the lock file pins. Our own
//! code is held to it by clippy's `incompatible_msrv` lint in `.ci/run`.

use std::path::Path;
use std::process::Command;

/// `1.89` and `1.89.0` alike, as (major, minor, patch).
fn version(v: &str) -> [u64; 3] {
    let mut out = [0; 3];
    for (slot, part) in out.iter_mut().zip(v.split('.')) {
        *slot = part.parse().unwrap_or_else(|_| panic!("version '{v}'"));
    }
    out
}

#[test]
fn declared_rust_version_covers_every_locked_package() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&root)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let ours: Vec<&serde_json::Value> = packages.iter().filter(|p| p["source"].is_null()).collect();
    assert!(ours.len() >= 4, "the workspace's own crates");
    let declared = ours[0]["rust_version"]
        .as_str()
        .expect("the workspace declares rust-version");
    for p in &ours {
        assert_eq!(p["rust_version"].as_str(), Some(declared), "{}", p["name"]);
    }
    let mut too_new = Vec::new();
    for p in packages.iter().filter(|p| !p["source"].is_null()) {
        if let Some(v) = p["rust_version"].as_str() {
            if version(v) > version(declared) {
                too_new.push(format!("{} {} needs {v}", p["name"], p["version"]));
            }
        }
    }
    assert!(
        too_new.is_empty(),
        "rust-version {declared} is older than: {too_new:?}"
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("stable ≥ {declared}")),
        "README.md does not state Rust {declared}"
    );
}
