//! Build-time settings: read `trusted-server.toml`, apply `TRUSTED_SERVER__SECTION__KEY`
//! overrides, validate, and embed the result as a `static` (see `trusted_server_settings`).
//! A mistake fails the build here, naming the key, instead of failing requests later.
//!
//! Also the first-party script (`js/tsjs/src/tsjs.js`): hashed into its path and compressed
//! once with gzip and br, so a request only picks the stored bytes (docs/script.md).

use std::io::Write;
use std::{env, fs, path::Path, path::PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    settings();
    script();
}

fn settings() {
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
    // A constant expression derived from the settings types (databake's `#[derive(Bake)]`),
    // so the static is data in the binary: nothing is parsed at startup.
    let expr = settings.to_rust_expr();
    // What the cache key's fingerprint covers: every setting, and the service version (the
    // code), so a deploy that could rewrite differently never reads the previous one's pages.
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let fingerprint = Sha256::digest(format!("{version}\n{expr}").as_bytes());
    let source = format!(
        "/// The validated settings, embedded at build time.\npub static SETTINGS: ::trusted_server_settings::Settings = {expr};\n\
         /// SHA-256 of the service version and the embedded settings: part of every cache key.\npub const SETTINGS_FINGERPRINT: [u8; 32] = {:?};\n",
        fingerprint.as_slice()
    );
    if let Err(e) = fs::write(&out, source) {
        fail(&format!("cannot write {}: {e}", out.display()));
    }
}

/// The script's source, relative to the package.
const SCRIPT_SOURCE: &str = "js/tsjs/src/tsjs.js";

/// Writes `tsjs.js`, `tsjs.js.gz` and `tsjs.js.br` to `OUT_DIR` and `script.rs`, which names
/// them with the path and the `ETag`s (`src/kit/generated.rs` includes it).
fn script() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let source = manifest_dir.join(SCRIPT_SOURCE);
    println!("cargo:rerun-if-changed={}", source.display());
    let bytes = match fs::read(&source) {
        Ok(b) => b,
        Err(e) => fail(&format!("cannot read {}: {e}", source.display())),
    };
    // `tsjs.version` is the service version: the source states it, so it is served as
    // written, and a release that forgets to change it does not build.
    let package = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let stated = format!("var VERSION = '{package}';");
    if !String::from_utf8_lossy(&bytes).contains(&stated) {
        fail(&format!(
            "{SCRIPT_SOURCE} must contain `{stated}` (the package version)"
        ));
    }
    let digest = Sha256::digest(&bytes);
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let gzip = gzip.write_all(&bytes).and_then(|()| gzip.finish());
    let gzip = gzip.unwrap_or_else(|e| fail(&format!("gzip of {SCRIPT_SOURCE}: {e}")));
    let mut br = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 22,
        ..Default::default()
    };
    if let Err(e) = brotli::BrotliCompress(&mut &bytes[..], &mut br, &params) {
        fail(&format!("brotli of {SCRIPT_SOURCE}: {e}"));
    }
    for (name, data) in [
        ("tsjs.js", &bytes),
        ("tsjs.js.gz", &gzip),
        ("tsjs.js.br", &br),
    ] {
        write(&out.join(name), data);
    }
    let code = format!(
        r#"// Generated by build.rs from {SCRIPT_SOURCE}.
/// The script's public path: `<hash>` is the first 16 hex digits of the SHA-256 of its bytes.
pub const SCRIPT_PATH: &str = "/static/tsjs={hash}.js";
/// The script as written (`Content-Encoding` absent).
pub static SCRIPT_IDENTITY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tsjs.js"));
/// The script, gzip (best compression).
pub static SCRIPT_GZIP: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tsjs.js.gz"));
/// The script, brotli (quality 11).
pub static SCRIPT_BR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tsjs.js.br"));
/// Strong `ETag` of each representation: their bytes differ, so their validators do.
pub const SCRIPT_ETAG_IDENTITY: &str = "\"{hash}\"";
/// See [`SCRIPT_ETAG_IDENTITY`].
pub const SCRIPT_ETAG_GZIP: &str = "\"{hash}-gzip\"";
/// See [`SCRIPT_ETAG_IDENTITY`].
pub const SCRIPT_ETAG_BR: &str = "\"{hash}-br\"";
"#
    );
    write(&out.join("script.rs"), code.as_bytes());
}

fn write(path: &Path, data: &[u8]) {
    if let Err(e) = fs::write(path, data) {
        fail(&format!("cannot write {}: {e}", path.display()));
    }
}

fn fail(message: &str) -> ! {
    // `cargo:error` is shown prominently by cargo; the exit status fails the build.
    eprintln!("error: {message}");
    println!("cargo::error={message}");
    std::process::exit(1);
}
