//! The house's rules, checked in CI (issue 24): no module import cycles in the core
//! (`crates/core`, root `src/lib.rs`) or the adapter (root `src/main.rs`); an engine
//! (`crates/core/src/body/`) that names no stage or feature; adapter phases that import no flow
//! or endpoint, and a kit that imports none of them.
//!
//! The graph is the one a reviewer reads: one node per file reached from the crate root through
//! its `mod` declarations, and an edge from file A to file B when A names a path that resolves
//! into B: a `use` leaf (grouped uses spelt out) or a path in code starting at `crate`,
//! `super`, `self`, a child module or a name A's module imports. A path resolves to the longest
//! run of its segments that are modules; the next name, when the module only re-exports it
//! (`pub use body::codec::Codec` in `lib.rs`), resolves to where the re-export points. Declaring
//! `mod x;` is not an edge; an edge inside one file is not an edge; test-only code (`#[cfg(test)]`
//! items, `#[test]` functions), comments and literals name nothing. Code generated into
//! `include!` files is not read.
//!
//! Standard library only: a small lexer gives tokens with comments and literals set apart, and
//! `use` trees and `mod` declarations are read from the tokens. A full parser would not see
//! the paths inside macro calls, which the tokens show.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod graph;
pub mod lex;
pub mod parse;
pub mod rules;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use graph::{Graph, Naming};
use rules::{BadEdge, EngineFindings, LayerFindings};

/// The engine's module in the core.
pub const ENGINE: &[&str] = &["body"];

/// One crate's findings.
#[derive(Debug, Clone)]
pub struct CrateReport {
    /// Name in the output (`core`, `adapter`).
    pub label: &'static str,
    /// Its module graph.
    pub graph: Graph,
    /// Its cycles: strongly connected components of more than one file.
    pub cycles: Vec<Vec<usize>>,
    /// The engine rule, for the core.
    pub engine: Option<EngineFindings>,
    /// The layer rule, for the adapter.
    pub layers: Option<LayerFindings>,
}

impl CrateReport {
    /// Whether the crate breaks no rule and its tree was read whole.
    pub fn is_clean(&self) -> bool {
        self.graph.errors.is_empty()
            && self.cycles.is_empty()
            && self
                .engine
                .as_ref()
                .is_none_or(|e| e.imports.is_empty() && e.words.is_empty())
            && self.layers.as_ref().is_none_or(|l| l.edges.is_empty())
    }
}

/// Checks the core and the adapter of the repository at `root`.
pub fn check_repo(root: &Path) -> Vec<CrateReport> {
    let core = Graph::build(&root.join("crates/core"), "src/lib.rs");
    let adapter = Graph::build(root, "src/main.rs");
    vec![
        CrateReport {
            label: "core",
            cycles: core.cycles(),
            engine: Some(rules::engine(&core, ENGINE)),
            layers: None,
            graph: core,
        },
        CrateReport {
            label: "adapter",
            cycles: adapter.cycles(),
            engine: None,
            layers: Some(rules::layers(&adapter, rules::ADAPTER_LAYERS)),
            graph: adapter,
        },
    ]
}

/// How many names of an edge the output shows (all of them when verbose).
const NAMES_SHOWN: usize = 4;
/// How many lines per denied word and file the output shows (all of them when verbose).
const LINES_SHOWN: usize = 6;

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn names(list: &[Naming], verbose: bool) -> String {
    let shown = if verbose { list.len() } else { NAMES_SHOWN };
    let mut text: Vec<String> = list
        .iter()
        .take(shown)
        .map(|n| format!("{} ({})", n.path, n.line))
        .collect();
    if list.len() > shown {
        text.push(format!("+{} more", list.len() - shown));
    }
    text.join(", ")
}

fn bad_edge(out: &mut String, graph: &Graph, e: &BadEdge, verbose: bool) {
    let _ = writeln!(
        out,
        "  {} -> {} ({}): {}",
        graph.files[e.from].rel,
        graph.files[e.to].rel,
        e.why,
        names(&e.names, verbose)
    );
}

/// The report as printed: one line per crate and rule, then what breaks it.
pub fn render(reports: &[CrateReport], verbose: bool) -> String {
    let mut out = String::new();
    for r in reports {
        let g = &r.graph;
        for error in &g.errors {
            let _ = writeln!(out, "{}: error: {error}", r.label);
        }
        let _ = writeln!(
            out,
            "{}: {}, {}",
            r.label,
            plural(g.files.len(), "module", "modules"),
            plural(r.cycles.len(), "cycle", "cycles")
        );
        for (k, cycle) in r.cycles.iter().enumerate() {
            let files: Vec<&str> = cycle.iter().map(|&f| g.files[f].rel.as_str()).collect();
            let _ = writeln!(
                out,
                "  cycle {} ({} files): {}",
                k + 1,
                files.len(),
                files.join(", ")
            );
            let mut shortest: Vec<&str> = g
                .shortest_cycle(cycle[0], cycle)
                .iter()
                .map(|&f| g.files[f].rel.as_str())
                .collect();
            shortest.push(files[0]);
            let _ = writeln!(out, "    e.g. {}", shortest.join(" -> "));
            for (&(from, to), list) in &g.edges {
                if cycle.contains(&from) && cycle.contains(&to) {
                    let _ = writeln!(
                        out,
                        "    {} -> {}: {}",
                        g.files[from].rel,
                        g.files[to].rel,
                        names(list, verbose)
                    );
                }
            }
        }
        if let Some(e) = &r.engine {
            let dir = format!("src/{}/", ENGINE.join("/"));
            let word_files: BTreeSet<usize> = e.words.iter().map(|w| w.file).collect();
            let _ = writeln!(
                out,
                "{}: engine ({dir}, {}) names no stage or feature: {}, {} in {}",
                r.label,
                plural(e.files.len(), "file", "files"),
                plural(
                    e.imports.len(),
                    "import of a non-leaf",
                    "imports of non-leaves"
                ),
                plural(e.words.len(), "denied word", "denied words"),
                plural(word_files.len(), "file", "files"),
            );
            for edge in &e.imports {
                bad_edge(&mut out, g, edge, verbose);
            }
            for &file in &word_files {
                let mut by_entry: BTreeMap<&str, Vec<String>> = BTreeMap::new();
                for w in e.words.iter().filter(|w| w.file == file) {
                    by_entry
                        .entry(w.entry)
                        .or_default()
                        .push(format!("{} `{}`", w.line, w.word));
                }
                let total: usize = by_entry.values().map(Vec::len).sum();
                let _ = writeln!(
                    out,
                    "  {}: {}",
                    g.files[file].rel,
                    plural(total, "denied word", "denied words")
                );
                for (entry, hits) in &by_entry {
                    let shown = if verbose { hits.len() } else { LINES_SHOWN };
                    let more = if hits.len() > shown { ", …" } else { "" };
                    let list: Vec<&str> = hits.iter().take(shown).map(String::as_str).collect();
                    let _ = writeln!(
                        out,
                        "    {entry} x{}: {}{more}",
                        hits.len(),
                        list.join(", ")
                    );
                }
            }
        }
        if let Some(l) = &r.layers {
            let (found, missing): (Vec<_>, Vec<_>) = l.found.iter().partition(|(_, &n)| n > 0);
            let found: Vec<String> = found
                .iter()
                .map(|(name, n)| format!("{name} ({})", plural(**n, "file", "files")))
                .collect();
            let missing: Vec<&str> = missing.iter().map(|(name, _)| **name).collect();
            let _ = writeln!(
                out,
                "{}: layers (phases import no flow or endpoint; kit imports none of them; found: {}; not found: {}): {}",
                r.label,
                if found.is_empty() { "none".to_owned() } else { found.join(", ") },
                if missing.is_empty() { "none".to_owned() } else { missing.join(", ") },
                plural(l.edges.len(), "violation", "violations")
            );
            for edge in &l.edges {
                bad_edge(&mut out, g, edge, verbose);
            }
        }
    }
    out
}
