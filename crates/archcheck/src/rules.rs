//! The house's rules over a crate's [`Graph`]: no cycles, an engine that names no stage or
//! feature, and layers that import only downwards.

use std::collections::BTreeMap;

use crate::graph::{Graph, Naming};

/// Stage and feature words the engine (`crates/core/src/body/`) must not contain, in its
/// identifiers, comments, docs or string literals. The one list the engine rule reads.
///
/// A word is split into parts at `_`, `.` and case changes (`lol_html`, `LolHtml`, `next.js`,
/// `NextJs` all give `lol`+`html` or `next`+`js`); an entry matches where the parts starting at
/// one part are the entry's own parts, the last one as a prefix (`hint` matches `hints` and
/// `HintSet`, `script` matches `JavaScript` but not `description`). Matching is case-insensitive.
/// Entries without a separator (`urlrule`) also match the parts run together (`Urlrule`).
pub const DENYLIST: &[&str] = &[
    "rsc", "flight", "html", "inject", "hint", "creative", "utf16", "nextjs", "next.js",
    "url_rule", "urlrule", "lol_html", "lolhtml", "charset", "cookie", "script", "edge_id",
    "consent",
];

/// An edge that breaks a rule.
#[derive(Debug, Clone)]
pub struct BadEdge {
    /// Importing file.
    pub from: usize,
    /// Imported file.
    pub to: usize,
    /// Where `from` names `to`.
    pub names: Vec<Naming>,
    /// Why it is not allowed.
    pub why: String,
}

/// A denied word in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeniedWord {
    /// The file.
    pub file: usize,
    /// The [`DENYLIST`] entry matched.
    pub entry: &'static str,
    /// The word it matched in.
    pub word: String,
    /// Its line.
    pub line: u32,
}

/// The engine rule's findings.
#[derive(Debug, Clone, Default)]
pub struct EngineFindings {
    /// The engine's files.
    pub files: Vec<usize>,
    /// Imports of files outside the engine that import something of the crate themselves.
    pub imports: Vec<BadEdge>,
    /// Denied words.
    pub words: Vec<DeniedWord>,
}

/// Whether `file`'s module path starts with `prefix`.
fn under(graph: &Graph, file: usize, prefix: &[&str]) -> bool {
    let module = &graph.files[file].module;
    module.len() >= prefix.len() && module.iter().zip(prefix).all(|(a, b)| a == b)
}

/// The first file outside `file`'s own module (and its submodules) that `file` reaches, if any:
/// a leaf of the crate reaches none.
fn reaches_outside(graph: &Graph, file: usize) -> Option<usize> {
    let own: Vec<&str> = graph.files[file]
        .module
        .iter()
        .map(String::as_str)
        .collect();
    let mut seen = vec![false; graph.files.len()];
    let mut todo = vec![file];
    seen[file] = true;
    while let Some(at) = todo.pop() {
        for next in graph.targets(at) {
            if !under(graph, next, &own) {
                return Some(next);
            }
            if !seen[next] {
                seen[next] = true;
                todo.push(next);
            }
        }
    }
    None
}

/// Rule 2: the files of module `engine` (and below) import only each other or leaves of the
/// crate (modules that reach nothing outside themselves and their submodules), and contain no
/// [`DENYLIST`] word.
pub fn engine(graph: &Graph, engine: &[&str]) -> EngineFindings {
    let files: Vec<usize> = (0..graph.files.len())
        .filter(|&f| under(graph, f, engine))
        .collect();
    let mut findings = EngineFindings::default();
    for (&(from, to), names) in &graph.edges {
        if !files.contains(&from) || files.contains(&to) {
            continue;
        }
        if let Some(outside) = reaches_outside(graph, to) {
            findings.imports.push(BadEdge {
                from,
                to,
                names: names.clone(),
                why: format!("not a leaf: reaches {}", graph.files[outside].rel),
            });
        }
    }
    for &file in &files {
        for word in &graph.files[file].facts.words {
            for (entry, found) in denied_words(&word.text) {
                findings.words.push(DeniedWord {
                    file,
                    entry,
                    word: found,
                    line: word.line,
                });
            }
        }
    }
    findings.files = files;
    findings
}

/// The [`DENYLIST`] entries in `text` (an identifier, comment or literal), with the word each
/// was found in.
pub fn denied_words(text: &str) -> Vec<(&'static str, String)> {
    let entries: Vec<(&'static str, Vec<String>)> =
        DENYLIST.iter().map(|&e| (e, parts(e))).collect();
    let mut found = Vec::new();
    for word in words(text) {
        let word_parts = parts(word);
        for (entry, entry_parts) in &entries {
            let hit = (0..word_parts.len()).any(|i| {
                let rest = &word_parts[i..];
                let Some((last, whole)) = entry_parts.split_last() else {
                    return false;
                };
                rest.len() > whole.len()
                    && rest.iter().zip(whole).all(|(a, b)| a == b)
                    && rest[whole.len()].starts_with(last.as_str())
            });
            if hit {
                found.push((*entry, word.to_owned()));
            }
        }
    }
    found
}

/// The words of a text: runs of letters, digits and `_`, with a `.` kept between two of them
/// (`next.js`).
fn words(text: &str) -> Vec<&str> {
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut start = None;
    for (k, &(i, c)) in bytes.iter().enumerate() {
        let inner_dot = c == '.'
            && start.is_some()
            && bytes.get(k + 1).is_some_and(|&(_, n)| n.is_alphanumeric());
        match (is_word(c) || inner_dot, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push(&text[s..i]);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

/// A word's parts, lower-cased: split at `_`, `.` and case changes (`HTMLRewriter` gives
/// `html`, `rewriter`).
fn parts(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' || c == '.' {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let boundary = c.is_uppercase()
            && (prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
                || prev.is_some_and(char::is_uppercase) && next.is_some_and(char::is_lowercase));
        if boundary && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// One layer rule: files under `layer` import nothing under any of `forbidden`.
#[derive(Debug, Clone, Copy)]
pub struct Layer {
    /// The layer's module (`phases`).
    pub layer: &'static str,
    /// Modules it must not import.
    pub forbidden: &'static [&'static str],
}

/// The adapter's layers: phases above the kit, flows and endpoints above the phases.
pub const ADAPTER_LAYERS: &[Layer] = &[
    Layer {
        layer: "phases",
        forbidden: &["flows", "endpoints"],
    },
    Layer {
        layer: "kit",
        forbidden: &["phases", "flows", "endpoints"],
    },
];

/// The layer rule's findings.
#[derive(Debug, Clone, Default)]
pub struct LayerFindings {
    /// Each layer module named by a rule, with how many files it has (0: not found).
    pub found: BTreeMap<&'static str, usize>,
    /// Imports that run upwards.
    pub edges: Vec<BadEdge>,
}

/// Rule 3 over `layers`.
pub fn layers(graph: &Graph, layers: &[Layer]) -> LayerFindings {
    let mut findings = LayerFindings::default();
    for rule in layers {
        for &name in std::iter::once(&rule.layer).chain(rule.forbidden) {
            let count = (0..graph.files.len())
                .filter(|&f| under(graph, f, &[name]))
                .count();
            findings.found.insert(name, count);
        }
    }
    for (&(from, to), names) in &graph.edges {
        for rule in layers {
            if !under(graph, from, &[rule.layer]) {
                continue;
            }
            if let Some(bad) = rule.forbidden.iter().find(|b| under(graph, to, &[b])) {
                findings.edges.push(BadEdge {
                    from,
                    to,
                    names: names.clone(),
                    why: format!("{} imports {bad}", rule.layer),
                });
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<&'static str> {
        denied_words(text).into_iter().map(|(e, _)| e).collect()
    }

    #[test]
    fn words_match_as_parts() {
        assert_eq!(entries("HtmlStage"), ["html"]);
        assert_eq!(entries("HTMLRewriter"), ["html"]);
        assert_eq!(entries("hints"), ["hint"]);
        assert_eq!(
            entries("UrlRule url_rules Urlrule"),
            ["url_rule", "url_rule", "urlrule"]
        );
        assert_eq!(entries("see next.js"), ["next.js"]);
        assert_eq!(entries("lol_html"), ["html", "lol_html"]);
        assert_eq!(entries("EdgeId"), ["edge_id"]);
        assert_eq!(entries("Utf16Guard"), ["utf16"]);
        assert!(entries("description inflight rs_cache the next. JS").is_empty());
    }
}
