//! Every relative link in `README.md` and `docs/*.md` resolves: the file (or folder) exists,
//! and a `#fragment` names a heading of the target Markdown file, slugged as GitHub slugs it.
//!
//! Lives beside the README/settings sync test (`load.rs`) because both keep the documents
//! honest; it reads the files at run time, so `cargo test -p trusted-server-settings` checks
//! the working tree. Links are found with a CommonMark parser, so examples inside code spans
//! and code blocks are not mistaken for links.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// A link (or image) target, with where it was written.
struct Link {
    file: PathBuf,
    dest: String,
}

/// The link targets and the heading anchors of one Markdown text.
fn scan(text: &str) -> (Vec<String>, Vec<String>) {
    let mut links = Vec::new();
    let mut anchors = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push(dest_url.into_string());
            }
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let slug = github_slug(&heading.take().unwrap_or_default());
                // GitHub numbers repeated headings: `x`, `x-1`, `x-2`.
                let n = seen.entry(slug.clone()).or_insert(0);
                anchors.push(if *n == 0 {
                    slug.clone()
                } else {
                    format!("{slug}-{n}")
                });
                *n += 1;
            }
            _ => {}
        }
    }
    (links, anchors)
}

/// GitHub's heading anchor: lowercase, spaces become `-`, and every character that is not a
/// letter, a digit, `-` or `_` is dropped.
fn github_slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Whether a destination leaves the repository (a URL with a scheme, or mail).
fn is_external(dest: &str) -> bool {
    let scheme_end = dest.find(':').unwrap_or(0);
    scheme_end > 0
        && dest[..scheme_end]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !dest[..scheme_end].contains('/')
}

/// Every broken relative link in `files` (paths relative to `root`), one line each.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut anchors_of: HashMap<PathBuf, Vec<String>> = HashMap::new();
    let mut links = Vec::new();
    for file in files {
        let text = fs::read_to_string(root.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let (dests, anchors) = scan(&text);
        anchors_of.insert(file.clone(), anchors);
        links.extend(dests.into_iter().map(|dest| Link {
            file: file.clone(),
            dest,
        }));
    }
    let mut broken = Vec::new();
    for Link { file, dest } in links {
        if is_external(&dest) {
            continue;
        }
        let (path, fragment) = match dest.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (dest.as_str(), None),
        };
        let target = if path.is_empty() {
            file.clone()
        } else {
            let joined = file.parent().unwrap_or(Path::new("")).join(path);
            match normalize(&joined) {
                Some(t) => t,
                None => {
                    broken.push(format!("{}: {dest}: leaves the repository", file.display()));
                    continue;
                }
            }
        };
        if !root.join(&target).exists() {
            broken.push(format!("{}: {dest}: no such file", file.display()));
            continue;
        }
        let Some(fragment) = fragment else { continue };
        if target.extension().is_none_or(|e| e != "md") {
            continue; // anchors into source files (`#L10`) are GitHub's, not the file's
        }
        let anchors = anchors_of.entry(target.clone()).or_insert_with(|| {
            let text = fs::read_to_string(root.join(&target)).unwrap_or_default();
            scan(&text).1
        });
        if !anchors.iter().any(|a| a == fragment) {
            broken.push(format!(
                "{}: {dest}: no heading with anchor #{fragment} in {} (has: {})",
                file.display(),
                target.display(),
                anchors.join(", ")
            ));
        }
    }
    broken
}

/// `a/../b/./c` → `b/c`; `None` if it climbs above the root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            std::path::Component::Normal(p) => out.push(p),
            _ => return None,
        }
    }
    Some(out)
}

/// `README.md` and every `docs/*.md`, relative to the repository root.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("a docs/ folder")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(root).expect("under the root").to_path_buf())
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = repository_root();
    let files = documents(&root);
    assert!(files.len() > 1, "no docs/*.md found: {files:?}");
    let broken = broken_links(&root, &files);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The checker itself: it finds each kind of broken link and accepts the good ones.
#[test]
fn the_checker_reports_missing_files_and_anchors() {
    let root = std::env::temp_dir().join(format!("doc-links-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join("docs")).unwrap();
    fs::write(root.join("code.rs"), "").unwrap();
    fs::write(
        root.join("README.md"),
        "# Title\n\n## How it *works*: `phases`\n\n## Repeated\n\n## Repeated\n\n\
         [a](docs/a.md) [b](docs/a.md#the-flight-wire-format-as-used) [c](#how-it-works-phases) \
         [d](#repeated-1) [e](code.rs#L1) [f](https://example.com/missing.md) [g](docs/) \
         `[not a link](nowhere.md)`\n\n```\n[nor this](nowhere.md)\n```\n\
         [bad1](docs/missing.md) [bad2](docs/a.md#nope) [bad3](#repeated-2) [bad4](../outside.md)\n",
    )
    .unwrap();
    fs::write(
        root.join("docs/a.md"),
        "# A\n\n## The Flight wire format, as used\n\n[back](../README.md#title)\n",
    )
    .unwrap();
    let files = documents(&root);
    let broken = broken_links(&root, &files);
    let _ = fs::remove_dir_all(&root);
    let dests: Vec<&str> = broken
        .iter()
        .map(|line| line.split(": ").nth(1).unwrap())
        .collect();
    assert_eq!(
        dests,
        [
            "docs/missing.md",
            "docs/a.md#nope",
            "#repeated-2",
            "../outside.md"
        ],
        "{broken:#?}"
    );
}

#[test]
fn github_slugs() {
    assert_eq!(github_slug("When bytes leave"), "when-bytes-leave");
    assert_eq!(
        github_slug("Measuring a running service: --target"),
        "measuring-a-running-service---target"
    );
    assert_eq!(
        github_slug("The Flight wire format, as this project relies on it"),
        "the-flight-wire-format-as-this-project-relies-on-it"
    );
    assert_eq!(
        github_slug("Profiling the guest: scripts/profile.sh"),
        "profiling-the-guest-scriptsprofilesh"
    );
}
