//! Tools for end-to-end tests and benchmarks: a timing HTTP/1 client on hyper ([`client`])
//! that records when the headers, the first body byte and the last byte arrived, and whether
//! the message was complete; a raw byte path for the few checks of wire bytes ([`wire`]); and
//! process guards for the servers the tests start.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::io::{self, BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub mod client;
pub mod raw_origin;
pub mod wire;

pub use client::{get, get_from, request, send, send_from, send_version, Session, Timed, Version};

/// A child process killed (and reaped) when dropped, so a failing test leaves nothing behind.
#[derive(Debug)]
pub struct ChildGuard {
    child: Option<Child>,
    /// What it is, for messages.
    pub name: String,
}

impl ChildGuard {
    /// Stops the process now.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The process id, while running.
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The workspace root (two levels above this crate), canonical when it can be.
pub fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Builds the demo origin (release) and starts it on a free port with the workspace's
/// fixtures, logging its requests to `log` if given.
///
/// # Errors
/// If the build fails or the origin does not start.
pub fn build_and_start_demo_origin(
    root: &Path,
    log: Option<&Path>,
) -> Result<(ChildGuard, SocketAddr), String> {
    run(Command::new(cargo()).current_dir(root).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "demo-origin",
    ]))?;
    // Where cargo just put it: `CARGO_TARGET_DIR` when set.
    start_demo_origin(
        &target_dir(root).join("release/demo-origin"),
        &root.join("fixtures/site"),
        log,
    )
    .map_err(|e| format!("demo origin: {e}"))
}

/// The `TRUSTED_SERVER__AUCTION__BIDDERS` value for the demo origin at `origin`: the demo's
/// three bidders (`fast`, TCF vendor 1; `slow`, vendor 755; `misbehave`, vendor 2) as
/// `trusted-server.toml` names them on port 8080, here on the origin's own port.
pub fn demo_bidders(origin: SocketAddr) -> String {
    let bidder = |code: &str, vendor: u16, partner: bool| {
        // `fast` and `slow` are partners of the ID graph, with ID endpoints, as in
        // trusted-server.toml.
        let ids = match partner {
            true => format!(
                ", eid_source = \"{code}.bidders.example\", sync_token_key = \"{code}_sync_token\", \
                 id_path = \"/bidders/{code}/id\""
            ),
            false => String::new(),
        };
        format!("{{ code = \"{code}\", endpoint = \"http://{origin}/bidders/{code}\", vendor_id = {vendor}{ids} }}")
    };
    format!(
        "[{}, {}, {}]",
        bidder("fast", 1, true),
        bidder("slow", 755, true),
        bidder("misbehave", 2, false)
    )
}

/// A port that was free on 127.0.0.1 a moment ago.
///
/// # Errors
/// If no port can be bound.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts the demo origin binary on a free port and returns it with its address. With `log`,
/// its request log (one line per request, with the wall-clock time its last byte was sent)
/// goes there.
///
/// # Errors
/// If it cannot start or does not announce its address within 30 s.
pub fn start_demo_origin(
    binary: &Path,
    root: &Path,
    log: Option<&Path>,
) -> io::Result<(ChildGuard, SocketAddr)> {
    let stderr = match log {
        Some(path) => Stdio::from(std::fs::File::create(path)?),
        None => Stdio::null(),
    };
    let mut child = Command::new(binary)
        .args(["--addr", "127.0.0.1:0", "--root"])
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    let guard = ChildGuard {
        child: Some(child),
        name: "demo-origin".into(),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| io::Error::other("demo origin did not announce its address"))?;
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| io::Error::other(format!("unexpected demo origin banner {line:?}")))?;
    Ok((guard, addr))
}

/// Starts `viceroy serve` for `wasm` on a free port and waits until it answers.
///
/// # Errors
/// If Viceroy cannot start or does not answer `/_ts/health` within 120 s.
pub fn start_viceroy(
    wasm: &Path,
    manifest: &Path,
    log: &Path,
) -> io::Result<(ChildGuard, SocketAddr)> {
    start_viceroy_with_env(wasm, manifest, log, &[])
}

/// [`start_viceroy`] with `env` added to Viceroy's environment.
///
/// # Errors
/// As [`start_viceroy`].
pub fn start_viceroy_with_env(
    wasm: &Path,
    manifest: &Path,
    log: &Path,
    env: &[(&str, &str)],
) -> io::Result<(ChildGuard, SocketAddr)> {
    let port = free_port()?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let log_file = std::fs::File::create(log)?;
    // Viceroy reads the manifest's local files (the development secret store) relative to its
    // working directory: the manifest's own.
    let manifest_dir = manifest.parent().filter(|d| !d.as_os_str().is_empty());
    // Viceroy's own log: errors, and its `execute` module's info, which records a guest's
    // `103 Early Hints` (dropped, not forwarded) with its headers (the hints scenario).
    let child = Command::new("viceroy")
        .env(
            "RUST_LOG",
            "viceroy=error,viceroy_lib=error,viceroy_lib::execute=info",
        )
        .envs(env.iter().copied())
        .current_dir(manifest_dir.unwrap_or(Path::new(".")))
        .arg("serve")
        .arg("-C")
        .arg(manifest)
        .arg("--addr")
        .arg(addr.to_string())
        .arg(wasm)
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()?;
    let guard = ChildGuard {
        child: Some(child),
        name: format!("viceroy {}", wasm.display()),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if let Ok(r) = get(addr, "/_ts/health", &[], Duration::from_secs(2)) {
            if r.status == 200 {
                return Ok((guard, addr));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(io::Error::other(format!(
        "viceroy did not answer on {addr}; see {}",
        log.display()
    )))
}

/// The `cargo` running us (or `cargo` from PATH).
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Runs a command to completion.
///
/// # Errors
/// If it cannot start or exits unsuccessfully.
pub fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{cmd:?}: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| format!("{cmd:?} failed: {status}"))
}

/// Compares a body with the expected bytes. The error gives both lengths and 40 bytes either
/// side of the first difference, which is what a reader needs to see what went wrong.
///
/// # Errors
/// When the bytes differ.
pub fn same_bytes(got: &[u8], want: &[u8]) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let show = |b: &[u8]| {
        String::from_utf8_lossy(&b[at.saturating_sub(40).min(b.len())..(at + 40).min(b.len())])
            .into_owned()
    };
    Err(format!(
        "{} bytes, expected {}; first difference at {at}: got {:?}, want {:?}",
        got.len(),
        want.len(),
        show(got),
        show(want)
    ))
}

/// Runs a test harness's set-up and reports how long it took; on failure prints the error
/// and exits 1, since no scenario can run without it.
pub fn set_up_or_exit<W>(harness: &str, set_up: impl FnOnce() -> Result<W, String>) -> W {
    let started = std::time::Instant::now();
    match set_up() {
        Ok(world) => {
            eprintln!(
                "{harness} set-up took {:.1}s",
                started.elapsed().as_secs_f64()
            );
            world
        }
        Err(e) => {
            eprintln!("{harness} set-up failed: {e}");
            std::process::exit(1);
        }
    }
}

/// Cargo's target directory for the workspace at `root`: `CARGO_TARGET_DIR` when set (so a
/// suite can build in its own directory without racing another one over the same module),
/// else `root/target`.
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Builds the service (release, wasm32-wasip1) with `TRUSTED_SERVER__*` overrides and copies
/// the module to `to`. Settings are compiled in, so a test or benchmark that needs the origin
/// on a port chosen at run time builds its own service.
///
/// # Errors
/// If the build or the copy fails.
pub fn build_service(
    root: &Path,
    to: &Path,
    overrides: &[(String, String)],
) -> Result<PathBuf, String> {
    run(&mut service_build(root, overrides))?;
    copy_module(&target_dir(root), to)
}

/// [`build_service`] of the checkout at `root` in cargo's target directory `target`. A checkout
/// of another revision needs a target directory of its own: cargo names a workspace member's
/// artifacts by its path inside the workspace, not by where the workspace is, and takes them as
/// fresh when they are newer than the member's files, so two checkouts sharing one directory
/// would each build with the other's crates.
///
/// # Errors
/// If the build or the copy fails.
pub fn build_service_in(
    root: &Path,
    target: &Path,
    to: &Path,
    overrides: &[(String, String)],
) -> Result<PathBuf, String> {
    let mut cmd = service_build(root, overrides);
    cmd.env("CARGO_TARGET_DIR", target);
    run(&mut cmd)?;
    copy_module(target, to)
}

/// The cargo command that builds the service at `root` with `overrides` in its environment.
fn service_build(root: &Path, overrides: &[(String, String)]) -> Command {
    let mut cmd = Command::new(cargo());
    cmd.current_dir(root).args([
        "build",
        "--quiet",
        "--release",
        "--target",
        "wasm32-wasip1",
        "--bin",
        "trusted-server-edge",
    ]);
    for (k, v) in overrides {
        cmd.env(k, v);
    }
    cmd
}

/// Copies the service module cargo left in `target` to `to`.
fn copy_module(target: &Path, to: &Path) -> Result<PathBuf, String> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(
        target.join("wasm32-wasip1/release/trusted-server-edge.wasm"),
        to,
    )
    .map_err(|e| format!("copy wasm: {e}"))?;
    Ok(to.to_path_buf())
}

/// The two builds of the service the tests and benchmarks compare, running under Viceroy.
#[derive(Debug)]
pub struct ServicePair {
    /// The build with `publisher.streaming = true`.
    pub streaming: SocketAddr,
    /// The same settings with `publisher.streaming = false`.
    pub buffered: SocketAddr,
    /// The two modules (streaming, then buffered), for starting more processes of them.
    pub modules: [PathBuf; 2],
    /// Stops both when dropped.
    pub guards: Vec<ChildGuard>,
}

/// The overrides of a build of the pair for the demo origin at `origin`: its URL, the host its
/// pages use, and `publisher.streaming`.
pub fn service_overrides(origin: SocketAddr, streaming: bool) -> Vec<(String, String)> {
    vec![
        (
            "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL".to_owned(),
            format!("http://{origin}"),
        ),
        // The demo origin's pages use this host; with only ORIGIN_URL overridden the
        // service would use the URL's host[:port] instead.
        (
            "TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST".to_owned(),
            "origin.demo-publisher.example".to_owned(),
        ),
        (
            "TRUSTED_SERVER__PUBLISHER__STREAMING".to_owned(),
            streaming.to_string(),
        ),
    ]
}

/// Builds the service twice for the origin at `origin` (streaming and buffered, plus
/// `extra` overrides), writes the modules and Viceroy logs to `dir`, and starts both.
///
/// # Errors
/// If a build fails or Viceroy does not come up.
pub fn start_service_pair(
    root: &Path,
    dir: &Path,
    origin: SocketAddr,
    extra: &[(&str, String)],
) -> Result<ServicePair, String> {
    start_service_pair_with(root, dir, origin, extra, &[], &[])
}

/// [`start_service_pair`], with `buffered_extra` overrides for the buffered build only (the
/// e2e suite gives it another `logging.level`, so one pair proves both levels), and
/// `viceroy_env` added to both Viceroy processes' environment (the benchmark narrows their
/// trust store).
///
/// # Errors
/// If a build fails or Viceroy does not come up.
pub fn start_service_pair_with(
    root: &Path,
    dir: &Path,
    origin: SocketAddr,
    extra: &[(&str, String)],
    buffered_extra: &[(&str, String)],
    viceroy_env: &[(&str, &str)],
) -> Result<ServicePair, String> {
    let overrides = |streaming: bool| {
        let mut list = service_overrides(origin, streaming);
        let only = if streaming { &[] } else { buffered_extra };
        list.extend((extra.iter().chain(only)).map(|(k, v)| ((*k).to_owned(), v.clone())));
        list
    };
    let manifest = root.join("fastly.toml");
    let mut guards = Vec::new();
    let mut addrs = Vec::new();
    let mut modules = Vec::new();
    for (name, streaming) in [("streaming", true), ("buffered", false)] {
        let wasm = build_service(
            root,
            &dir.join(format!("{name}.wasm")),
            &overrides(streaming),
        )?;
        let (guard, addr) = start_viceroy_with_env(
            &wasm,
            &manifest,
            &dir.join(format!("viceroy-{name}.log")),
            viceroy_env,
        )
        .map_err(|e| format!("viceroy ({name}): {e}"))?;
        guards.push(guard);
        addrs.push(addr);
        modules.push(wasm);
    }
    let [streaming_wasm, buffered_wasm] = <[PathBuf; 2]>::try_from(modules)
        .map_err(|m| format!("built {} modules, not 2", m.len()))?;
    Ok(ServicePair {
        streaming: addrs[0],
        buffered: addrs[1],
        modules: [streaming_wasm, buffered_wasm],
        guards,
    })
}

/// The first-party script's hash as its served path names it (`/static/tsjs=<hash>.js`,
/// docs/script.md): the first 16 hex digits of the SHA-256 of `source`, computed here
/// independently of the service's build.
pub fn script_hash(source: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(source)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_shows_where_bodies_differ() {
        assert!(same_bytes(b"abc", b"abc").is_ok());
        let e = same_bytes(b"abXd", b"abcd").unwrap_err();
        assert!(e.contains("first difference at 2"), "{e}");
        let e = same_bytes(b"ab", b"abcd").unwrap_err();
        assert!(e.contains("2 bytes, expected 4"), "{e}");
    }
}
