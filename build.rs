//! Build-time settings: read `trusted-server.toml`, apply `TRUSTED_SERVER__SECTION__KEY`
//! overrides, validate, and embed the result as a `static` (see `trusted_server_settings`).
//! A mistake fails the build here, naming the key, instead of failing requests later.

use std::{env, fs, path::PathBuf};

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let path = env::var_os("TRUSTED_SERVER_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir.join("trusted-server.toml"));
    println!("cargo:rerun-if-changed={}", path.display());
    println!("cargo:rerun-if-env-changed=TRUSTED_SERVER_CONFIG");
    let vars: Vec<(String, String)> = env::vars()
        .filter(|(k, _)| k.starts_with("TRUSTED_SERVER__"))
        .collect();
    for (k, _) in &vars {
        println!("cargo:rerun-if-env-changed={k}");
    }
    // Watch every known key's override even while unset, so setting one later rebuilds. The
    // list comes from the settings types. (`[response_headers]` names are open-ended: a new
    // one is picked up by the next rebuild.)
    for k in trusted_server_settings::override_variables() {
        println!("cargo:rerun-if-env-changed={k}");
    }
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => fail(&format!("cannot read {}: {e}", path.display())),
    };
    let settings = match trusted_server_settings::load_with_notes(&text, vars) {
        Ok((settings, notes)) => {
            for note in notes {
                println!("cargo::warning={note}");
            }
            settings
        }
        // The error names the key, and the variable or the line it came from.
        Err(e) => fail(&e.in_file(&path)),
    };
    let out =
        PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("settings.rs");
    let source = format!(
        "/// The validated settings, embedded at build time.\npub static SETTINGS: ::trusted_server_settings::Settings = {};\n",
        settings.to_rust_expr()
    );
    if let Err(e) = fs::write(&out, source) {
        fail(&format!("cannot write {}: {e}", out.display()));
    }
}

fn fail(message: &str) -> ! {
    // `cargo:error` is shown prominently by cargo; the exit status fails the build.
    eprintln!("error: {message}");
    println!("cargo::error={message}");
    std::process::exit(1);
}
