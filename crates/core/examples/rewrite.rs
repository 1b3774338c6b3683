//! Rewrites one body from stdin to stdout through the same pipeline the service runs.
//!
//! `rewrite <content-type> <origin-authority> <scheme> <target-authority> [chunk-size]`
//!
//! Used by the independent Flight oracle (`tests/oracle`) and handy for looking at what the
//! proxy would make of a saved page. The body is taken as identity-coded; it is pushed in
//! chunks of `chunk-size` bytes (default 16384), so split-dependent bugs can be provoked too.

use std::io::{Read, Write};
use std::process::ExitCode;

use trusted_server_core::{BodyPlan, Codec, PageOptions, UrlRule};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (content_type, origin, scheme, target) = match args.as_slice() {
        [ct, o, s, t] | [ct, o, s, t, _] => (ct, o, s, t),
        _ => {
            eprintln!("usage: rewrite <content-type> <origin-authority> <scheme> <target-authority> [chunk-size]");
            return ExitCode::from(2);
        }
    };
    let chunk = match args.get(4).map(|c| c.parse::<usize>()) {
        None => 16 * 1024,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("rewrite: chunk-size must be a positive integer");
            return ExitCode::from(2);
        }
    };
    let options = PageOptions::default();
    let BodyPlan::Rewrite { rewrite, .. } =
        BodyPlan::decide(200, Some(content_type), None, options.nextjs.enabled)
    else {
        eprintln!("rewrite: {content_type} is not rewritten by the service");
        return ExitCode::from(2);
    };
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("rewrite: reading stdin: {e}");
        return ExitCode::FAILURE;
    }
    let rule = UrlRule::new(origin, scheme, target);
    let mut pipeline =
        trusted_server_core::page::pipeline(Codec::Identity, rewrite, rule, &options, Vec::new());
    for piece in input.chunks(chunk) {
        if let Err(e) = pipeline.push(piece) {
            eprintln!("rewrite: {e}");
            return ExitCode::FAILURE;
        }
    }
    match pipeline.finish() {
        Ok((out, report)) => {
            if let Some(why) = report.stages.rsc.degraded {
                eprintln!("rewrite: Flight rewriting degraded: {why}");
            }
            eprintln!(
                "rewrite: RSC bytes held at most: {}",
                report.stages.rsc.peak_held
            );
            if let Err(e) = std::io::stdout().write_all(&out) {
                eprintln!("rewrite: writing stdout: {e}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rewrite: {e}");
            ExitCode::FAILURE
        }
    }
}
