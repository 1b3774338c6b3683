//! `demo-origin [--addr 127.0.0.1:8080] [--root <dir>] [--nextjs <dir>] [--quiet]`
//!
//! Binds the given address (default `127.0.0.1:8080`), prints exactly one
//! line `listening on http://ADDR` to stdout, then serves forever, logging
//! one line per request to stderr (unless `--quiet`). `--nextjs` names the
//! Next.js captures served under `/next` (default `fixtures/nextjs`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str =
    "usage: demo-origin [--addr 127.0.0.1:8080] [--root <dir>] [--nextjs <dir>] [--quiet]";

/// Parsed command line.
struct Cli {
    addr: String,
    root: PathBuf,
    nextjs: Option<PathBuf>,
    quiet: bool,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<Cli>, String> {
    let mut cli = Cli {
        addr: "127.0.0.1:8080".to_string(),
        root: demo_origin::default_root(),
        nextjs: None,
        quiet: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--addr" => cli.addr = value("--addr")?,
            "--root" => cli.root = PathBuf::from(value("--root")?),
            "--nextjs" => cli.nextjs = Some(PathBuf::from(value("--nextjs")?)),
            "--quiet" if inline.is_none() => cli.quiet = true,
            "-h" | "--help" => return Ok(None),
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    Ok(Some(cli))
}

fn main() -> ExitCode {
    let cli = match parse_args(std::env::args().skip(1)) {
        Ok(Some(cli)) => cli,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("demo-origin: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if !cli.root.is_dir() {
        eprintln!(
            "demo-origin: root {} is not a directory",
            cli.root.display()
        );
        return ExitCode::from(2);
    }
    let replay = match &cli.nextjs {
        None => None,
        Some(dir) => match demo_origin::nextjs::Replay::load(dir) {
            Ok(replay) => Some(replay),
            Err(e) => {
                eprintln!("demo-origin: --nextjs: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let server = match demo_origin::Server::bind(cli.addr.as_str(), &cli.root) {
        Ok(s) if cli.nextjs.is_some() => s.with_logging(!cli.quiet).with_nextjs(replay),
        Ok(s) => s.with_logging(!cli.quiet),
        Err(e) => {
            eprintln!("demo-origin: cannot bind {}: {e}", cli.addr);
            return ExitCode::from(1);
        }
    };
    let addr = match server.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("demo-origin: {e}");
            return ExitCode::from(1);
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "listening on http://{addr}");
    let _ = stdout.flush();
    drop(stdout);
    eprintln!("demo-origin: serving {}", cli.root.display());
    match server.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo-origin: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Cli>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults() {
        let cli = parse(&[]).unwrap().unwrap();
        assert_eq!(cli.addr, "127.0.0.1:8080");
        assert!(cli.root.ends_with("fixtures/site"));
        assert_eq!(cli.nextjs, None);
        assert!(!cli.quiet);
    }

    #[test]
    fn flags_with_space_or_equals() {
        let cli = parse(&[
            "--addr",
            "127.0.0.1:0",
            "--root=/tmp/x",
            "--nextjs",
            "/tmp/n",
            "--quiet",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(cli.addr, "127.0.0.1:0");
        assert_eq!(cli.root, PathBuf::from("/tmp/x"));
        assert_eq!(cli.nextjs, Some(PathBuf::from("/tmp/n")));
        assert!(cli.quiet);
        assert!(parse(&["--help"]).unwrap().is_none());
    }

    #[test]
    fn errors() {
        assert!(parse(&["--addr"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["--quiet=1"]).is_err());
    }
}
