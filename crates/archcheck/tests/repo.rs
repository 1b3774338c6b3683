//! The checker on this repository: it reads the whole tree it reaches.

use std::fs;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn reads_every_file_it_reaches_and_misses_only_test_only_modules() {
    let root = repo_root();
    for report in archcheck::check_repo(&root) {
        let g = &report.graph;
        assert!(g.errors.is_empty(), "{}: {:?}", report.label, g.errors);
        assert!(
            g.files.len() > 10,
            "{}: {} files",
            report.label,
            g.files.len()
        );
        for file in &g.files {
            assert!(!file.facts.words.is_empty(), "{} read as empty", file.rel);
        }
        // A source file not reached is one declared under `#[cfg(test)]`.
        let crate_dir = if report.label == "core" {
            root.join("crates/core")
        } else {
            root.clone()
        };
        let mut all = Vec::new();
        rust_files(&crate_dir.join("src"), &mut all);
        for path in all {
            let rel = path
                .strip_prefix(&crate_dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if g.files.iter().any(|f| f.rel == rel) {
                continue;
            }
            let name = match path.file_stem().unwrap().to_str().unwrap() {
                "mod" => path
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned(),
                stem => stem.to_owned(),
            };
            let declared_for_tests = g.files.iter().any(|f| {
                let text = fs::read_to_string(crate_dir.join(&f.rel)).unwrap();
                text.contains(&format!("#[cfg(test)]\nmod {name};"))
            });
            assert!(
                declared_for_tests,
                "{rel} is neither reached nor a test-only module"
            );
        }
    }
}
