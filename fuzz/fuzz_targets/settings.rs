//! `trusted_server_settings::load` on arbitrary TOML text and environment pairs.
//!
//! * It never panics, and gives the same answer whatever the order of the environment.
//! * An error names a key and says what is wrong (neither part empty), and its message shows
//!   both.
//! * The shipped `trusted-server.toml` with one unknown key added (a name from the fuzzer, in
//!   `[publisher]`, in `[integrations.nextjs]` or as a new section) is an error naming that key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_settings::{keys, load};

/// The settings file this repository ships.
const SHIPPED: &str = include_str!("../../trusted-server.toml");

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    if mode & 1 == 0 {
        // TOML text, then `NAME=value` environment lines after a NUL.
        let (toml, env) = text.split_once('\0').unwrap_or((&text, ""));
        let env: Vec<(String, String)> = env
            .split('\0')
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| {
                let k = if mode & 2 != 0 {
                    format!("TRUSTED_SERVER__{k}")
                } else {
                    k.to_owned()
                };
                (k, v.to_owned())
            })
            .collect();
        let forward = load(toml, env.iter().map(|(k, v)| (k, v)));
        let backward = load(toml, env.iter().rev().map(|(k, v)| (k, v)));
        assert_eq!(
            forward, backward,
            "the environment's order changed the answer"
        );
        if let Err(e) = forward {
            assert!(!e.key.trim().is_empty(), "an error names no key: {e:?}");
            assert!(!e.problem.trim().is_empty(), "an error says nothing: {e:?}");
            let message = e.to_string();
            assert!(
                message.contains(&e.key) && message.contains(&e.problem),
                "the message hides the key or the problem: {message}"
            );
        }
        return;
    }

    // One unknown key in the shipped file.
    let name: String = text
        .chars()
        .filter(|c| c.is_ascii_lowercase() || *c == '_')
        .take(24)
        .collect();
    let known = keys();
    let known = |key: String| known.contains(&key);
    if name.is_empty() || known(format!("publisher.{name}")) {
        return;
    }
    let (file, key) = match (mode >> 1) % 3 {
        0 => (
            SHIPPED.replacen("[publisher]\n", &format!("[publisher]\n{name} = 1\n"), 1),
            format!("publisher.{name}"),
        ),
        1 if !known(format!("integrations.nextjs.{name}")) => (
            SHIPPED.replacen(
                "[integrations.nextjs]\n",
                &format!("[integrations.nextjs]\n{name} = 1\n"),
                1,
            ),
            format!("integrations.nextjs.{name}"),
        ),
        2 if !is_section(&name) => (format!("{SHIPPED}\n[{name}]\nx = 1\n"), name.clone()),
        _ => return,
    };
    assert!(file != SHIPPED, "the key was not added");
    match load(&file, Vec::<(String, String)>::new()) {
        Ok(_) => panic!("the unknown key `{key}` was accepted"),
        Err(e) => assert!(
            e.key == key && e.to_string().contains(&key),
            "the error for the unknown key `{key}` does not name it: {e}"
        ),
    }
});

/// Whether `name` is already a section of the shipped file or of the settings schema: a new
/// `[name]` table would then be a duplicate table (a TOML error) or a known section, not an
/// unknown key.
fn is_section(name: &str) -> bool {
    let prefix = format!("{name}.");
    SHIPPED.lines().any(|line| {
        let line = line.trim();
        line == format!("[{name}]") || line.starts_with(&format!("[{prefix}"))
    }) || keys().iter().any(|key| key.starts_with(&prefix))
}
