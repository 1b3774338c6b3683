//! Prints the origin settings that `build.rs` will embed: the same file
//! (`$TRUSTED_SERVER_CONFIG`, else `trusted-server.toml` in the current directory) and the
//! same `TRUSTED_SERVER__*` variables, through the same loader. `scripts/serve.sh` runs it from
//! the repository root before it builds and serves.

use std::process::ExitCode;
use std::{env, fs, path::PathBuf};

fn main() -> ExitCode {
    let path = env::var_os("TRUSTED_SERVER_CONFIG")
        .map_or_else(|| PathBuf::from("trusted-server.toml"), PathBuf::from);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let vars = env::vars().filter(|(k, _)| k.starts_with("TRUSTED_SERVER__"));
    match trusted_server_settings::load_with_notes(&text, vars) {
        Ok((settings, notes)) => {
            let p = &settings.publisher;
            println!("publisher.origin_url  = {}", p.origin_url);
            println!("publisher.origin_host = {}", p.origin_host);
            for note in notes {
                println!("note: {note}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", e.in_file(&path));
            ExitCode::FAILURE
        }
    }
}
