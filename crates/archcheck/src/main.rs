//! `cargo run -p archcheck [-- --verbose] [-- ROOT]`: checks the repository (by default the one
//! this crate sits in) and exits non-zero on any violation (1) or an unreadable tree (2).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut verbose = false;
    let mut root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "-v" | "--verbose" => verbose = true,
            "-h" | "--help" => {
                println!("usage: archcheck [--verbose] [REPO_ROOT]");
                return ExitCode::SUCCESS;
            }
            path => root = PathBuf::from(path),
        }
    }
    let reports = archcheck::check_repo(&root);
    print!("{}", archcheck::render(&reports, verbose));
    if reports.iter().any(|r| !r.graph.errors.is_empty()) {
        ExitCode::from(2)
    } else if reports.iter().all(archcheck::CrateReport::is_clean) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
