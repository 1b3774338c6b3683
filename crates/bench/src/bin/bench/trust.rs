//! The trust store of the benchmark's Viceroy processes, and the one way it starts them.
//!
//! Viceroy 0.22 copies its whole trust store inside every upstream `send_async`, plain HTTP
//! included (`upstream::send_request` clones a `TlsConfig` that holds the root certificates
//! by value): with a system bundle of a few hundred roots that is ~90 µs of the guest's time
//! per send, the emulator's own work and not the service's. Every backend the benchmark starts
//! is plain HTTP on loopback, so its Viceroy processes trust one certificate unless
//! `--system-roots` is given (docs/performance.md, "Viceroy's trust store"). Only Viceroy gets
//! the narrowed store: the builds, the demo origin and every other child keep the caller's.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use e2e::ChildGuard;

/// The environment every Viceroy process of this run gets, set once by [`init`].
static VICEROY_ENV: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// Where a system's certificate bundle usually is, after `$SSL_CERT_FILE`.
const BUNDLES: [&str; 3] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// Chooses the Viceroy processes' trust store for this run: the system's with
/// `system_roots`, else one certificate (the first of the system bundle) written to
/// `dir/viceroy-root.pem` with `SSL_CERT_DIR` an empty `dir/no-roots` (Viceroy refuses to
/// start with no root at all). Without a bundle, Viceroy keeps its default.
///
/// # Errors
/// If the files cannot be written, or `init` ran before.
pub fn init(system_roots: bool, dir: &Path) -> Result<(), String> {
    let env = if system_roots {
        eprintln!("bench: Viceroy keeps the system's trust store (--system-roots)");
        Vec::new()
    } else {
        one_root(dir)?
    };
    VICEROY_ENV
        .set(env)
        .map_err(|_| "the trust store was chosen twice".to_owned())
}

fn one_root(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let from_env = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    let bundle = from_env
        .into_iter()
        .chain(BUNDLES.iter().map(PathBuf::from))
        .find(|p| p.is_file());
    let Some(bundle) = bundle else {
        eprintln!(
            "bench: no system certificate bundle found: Viceroy keeps its default trust store"
        );
        return Ok(Vec::new());
    };
    let text =
        std::fs::read_to_string(&bundle).map_err(|e| format!("{}: {e}", bundle.display()))?;
    let Some(first) = first_certificate(&text) else {
        return Err(format!("{}: no PEM certificate in it", bundle.display()));
    };
    let no_roots = dir.join("no-roots");
    std::fs::create_dir_all(&no_roots).map_err(|e| format!("{}: {e}", no_roots.display()))?;
    let root = dir.join("viceroy-root.pem");
    std::fs::write(&root, first).map_err(|e| format!("{}: {e}", root.display()))?;
    eprintln!(
        "bench: Viceroy trusts one root certificate (from {}); --system-roots keeps them all",
        bundle.display()
    );
    Ok(vec![
        ("SSL_CERT_FILE".to_owned(), root.display().to_string()),
        ("SSL_CERT_DIR".to_owned(), no_roots.display().to_string()),
    ])
}

/// The first `BEGIN CERTIFICATE` … `END CERTIFICATE` block of a PEM bundle, with its newline.
fn first_certificate(pem: &str) -> Option<String> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let start = pem.find(BEGIN)?;
    let end = start + pem[start..].find(END)? + END.len();
    Some(format!("{}\n", &pem[start..end]))
}

/// The environment [`init`] chose, for Viceroy processes started elsewhere
/// ([`e2e::start_service_pair_with`]). Empty before `init`.
pub fn viceroy_env() -> Vec<(&'static str, &'static str)> {
    VICEROY_ENV
        .get()
        .map(|env| env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
        .unwrap_or_default()
}

/// [`e2e::start_viceroy`] with the trust store [`init`] chose.
///
/// # Errors
/// As [`e2e::start_viceroy`].
pub fn start_viceroy(
    wasm: &Path,
    manifest: &Path,
    log: &Path,
) -> std::io::Result<(ChildGuard, SocketAddr)> {
    e2e::start_viceroy_with_env(wasm, manifest, log, &viceroy_env())
}

#[cfg(test)]
mod tests {
    use super::first_certificate;

    #[test]
    fn takes_only_the_first_certificate() {
        let pem = "# a comment\n-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n\
                   -----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n";
        let first = first_certificate(pem).unwrap();
        assert_eq!(
            first,
            "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n"
        );
        assert_eq!(first_certificate("no certificate here"), None);
        assert_eq!(first_certificate("-----BEGIN CERTIFICATE-----\nAAA"), None);
    }
}
