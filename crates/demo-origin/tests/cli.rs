//! Runs the real binary: `--addr 127.0.0.1:0` must print the bound port.

mod support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use support::make_site;

/// Kills the child (by its own handle) even if an assertion fails.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn binary_prints_listening_line_and_serves() {
    let site = make_site();
    let mut child = Guard(
        Command::new(env!("CARGO_BIN_EXE_demo-origin"))
            .args(["--addr", "127.0.0.1:0", "--root"])
            .arg(&site.root)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .trim_end()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let addr: SocketAddr = url.parse().unwrap();
    assert!(addr.ip().is_loopback());
    assert_ne!(addr.port(), 0);

    let r = support::get(addr, "/index.html", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, site.read("index.html"));

    // One log line per request on stderr.
    let mut log = BufReader::new(child.0.stderr.take().unwrap());
    let mut entry = String::new();
    loop {
        entry.clear();
        assert_ne!(log.read_line(&mut entry).unwrap(), 0, "stderr closed");
        if entry.contains("GET /index.html") {
            break;
        }
    }
    assert!(entry.contains(" 200 "), "{entry}");
}

#[test]
fn binary_rejects_bad_arguments() {
    let out = Command::new(env!("CARGO_BIN_EXE_demo-origin"))
        .arg("--frobnicate")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let out = Command::new(env!("CARGO_BIN_EXE_demo-origin"))
        .args(["--root", "/definitely/not/here", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
