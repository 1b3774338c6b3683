//! The checker on small trees written to temporary directories: what it must catch, and what it
//! must leave alone.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use archcheck::{check_repo, CrateReport};

/// A repository laid out like this one (`crates/core/src/lib.rs`, `src/main.rs`), removed on drop.
struct Fixture {
    root: PathBuf,
}

impl Fixture {
    fn new(name: &str, files: &[(&str, &str)]) -> Fixture {
        let root = std::env::temp_dir().join(format!("archcheck-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let defaults = [
            ("crates/core/src/lib.rs", ""),
            ("src/main.rs", "fn main() {}"),
        ];
        for (path, text) in defaults.iter().chain(files) {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        Fixture { root }
    }

    fn check(&self) -> (CrateReport, CrateReport) {
        let mut reports = check_repo(&self.root);
        for r in &reports {
            assert!(r.graph.errors.is_empty(), "{:?}", r.graph.errors);
        }
        let adapter = reports.pop().unwrap();
        (reports.pop().unwrap(), adapter)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Each cycle as its files' paths.
fn cycles(r: &CrateReport) -> Vec<Vec<&str>> {
    r.cycles
        .iter()
        .map(|c| c.iter().map(|&f| r.graph.files[f].rel.as_str()).collect())
        .collect()
}

/// Every edge as `from -> to`.
fn edges(r: &CrateReport) -> Vec<String> {
    r.graph
        .edges
        .keys()
        .map(|&(f, t)| format!("{} -> {}", r.graph.files[f].rel, r.graph.files[t].rel))
        .collect()
}

#[test]
fn catches_a_two_file_cycle() {
    let f = Fixture::new(
        "two",
        &[
            ("crates/core/src/lib.rs", "mod a;\nmod b;\n"),
            (
                "crates/core/src/a.rs",
                "use crate::b::B;\npub struct A(B);\n",
            ),
            (
                "crates/core/src/b.rs",
                "pub struct B;\nfn f() -> Option<crate::a::A> { None }\n",
            ),
        ],
    );
    let (core, adapter) = f.check();
    assert_eq!(cycles(&core), [["src/a.rs", "src/b.rs"]]);
    let names: Vec<String> = core
        .graph
        .edges
        .values()
        .flatten()
        .map(|n| format!("{}@{}", n.path, n.line))
        .collect();
    assert_eq!(names, ["crate::b::B@1", "crate::a::A@2"]);
    assert!(!core.is_clean());
    assert!(adapter.is_clean());
    let text = archcheck::render(&[core, adapter], false);
    assert!(text.starts_with("core: 3 modules, 1 cycle\n"), "{text}");
    assert!(
        text.contains("    src/a.rs -> src/b.rs: crate::b::B (1)\n"),
        "{text}"
    );
    assert!(text.contains("adapter: 1 module, 0 cycles\n"), "{text}");
}

#[test]
fn catches_a_three_file_cycle_through_super_and_a_grouped_use() {
    let f = Fixture::new(
        "three",
        &[
            ("src/main.rs", "mod m;\nfn main() {}\n"),
            ("src/m/mod.rs", "mod x;\npub(crate) mod y;\nmod z;\n"),
            (
                "src/m/x.rs",
                "use crate::m::{y::{Y, W}, self};\npub struct X;\n",
            ),
            (
                "src/m/y.rs",
                "pub struct Y;\npub struct W;\nfn f() { super::z::g(); }\n",
            ),
            (
                "src/m/z.rs",
                "pub fn g() {}\nfn h(_: super::super::m::x::X) {}\n",
            ),
        ],
    );
    let (_, adapter) = f.check();
    // `mod x;` in m/mod.rs is no edge, so m/mod.rs is in no cycle; `self` in x.rs names it.
    assert_eq!(
        cycles(&adapter),
        [["src/m/x.rs", "src/m/y.rs", "src/m/z.rs"]]
    );
    assert!(edges(&adapter).contains(&"src/m/x.rs -> src/m/mod.rs".to_owned()));
}

#[test]
fn catches_a_cycle_through_a_root_re_export() {
    let f = Fixture::new(
        "reexport",
        &[
            (
                "crates/core/src/lib.rs",
                "mod body;\nmod content;\nmod own;\npub use body::codec::Codec;\npub struct Own;\n",
            ),
            ("crates/core/src/body/mod.rs", "pub(crate) mod codec;\n"),
            (
                "crates/core/src/body/codec.rs",
                "use crate::content::Plan;\npub enum Codec { A(Plan) }\n",
            ),
            (
                "crates/core/src/content.rs",
                "pub struct Plan(Box<crate::Codec>);\n",
            ),
            (
                "crates/core/src/own.rs",
                "pub fn own() -> crate::Own { crate::Own }\n",
            ),
        ],
    );
    let (core, _) = f.check();
    assert_eq!(cycles(&core), [["src/body/codec.rs", "src/content.rs"]]);
    // The name defined in lib.rs itself is an edge to lib.rs (and lib.rs imports codec.rs).
    let all = edges(&core);
    assert!(
        all.contains(&"src/own.rs -> src/lib.rs".to_owned()),
        "{all:?}"
    );
    assert!(
        !all.contains(&"src/content.rs -> src/lib.rs".to_owned()),
        "{all:?}"
    );
    assert!(
        all.contains(&"src/lib.rs -> src/body/codec.rs".to_owned()),
        "{all:?}"
    );
}

#[test]
fn catches_an_engine_file_naming_html_in_a_doc_comment() {
    let f = Fixture::new(
        "engine-word",
        &[
            ("crates/core/src/lib.rs", "mod body;\n"),
            ("crates/core/src/body/mod.rs", "mod pipeline;\n"),
            (
                "crates/core/src/body/pipeline.rs",
                "//! The engine.\n\n/// Feeds the Html rewriter.\npub struct Pipeline;\n",
            ),
        ],
    );
    let (core, _) = f.check();
    let engine = core.engine.as_ref().unwrap();
    assert_eq!(engine.files.len(), 2);
    let words: Vec<(&str, u32, &str)> = engine
        .words
        .iter()
        .map(|w| (w.entry, w.line, w.word.as_str()))
        .collect();
    assert_eq!(words, [("html", 3, "Html")]);
    assert!(!core.is_clean());
}

#[test]
fn catches_an_engine_import_of_a_non_leaf() {
    let f = Fixture::new(
        "engine-import",
        &[
            (
                "crates/core/src/lib.rs",
                "mod body;\nmod page;\nmod util;\nmod url;\n",
            ),
            (
                "crates/core/src/body/mod.rs",
                "use crate::page::Page;\nuse crate::util::clamp;\nuse crate::url::Rule;\n",
            ),
            (
                "crates/core/src/page.rs",
                "pub struct Page;\nuse crate::util::clamp;\n",
            ),
            ("crates/core/src/util.rs", "pub fn clamp() {}\n"),
            // A module whose imports stay inside it is a leaf.
            (
                "crates/core/src/url/mod.rs",
                "mod spell;\npub use spell::Rule;\n",
            ),
            ("crates/core/src/url/spell.rs", "pub struct Rule;\n"),
        ],
    );
    let (core, _) = f.check();
    let engine = core.engine.as_ref().unwrap();
    let bad: Vec<(&str, &str, &str)> = engine
        .imports
        .iter()
        .map(|e| {
            (
                core.graph.files[e.from].rel.as_str(),
                core.graph.files[e.to].rel.as_str(),
                e.why.as_str(),
            )
        })
        .collect();
    assert_eq!(
        bad,
        [(
            "src/body/mod.rs",
            "src/page.rs",
            "not a leaf: reaches src/util.rs"
        )]
    );
    assert!(engine.words.is_empty());
}

#[test]
fn catches_a_phase_importing_a_flow_and_a_kit_importing_a_phase() {
    let f = Fixture::new(
        "layers",
        &[
            (
                "src/main.rs",
                "mod flows;\nmod kit;\nmod phases;\nfn main() { flows::proxy::run(); }\n",
            ),
            ("src/flows/mod.rs", "pub mod proxy;\n"),
            (
                "src/flows/proxy.rs",
                "pub fn run() { crate::phases::body::send(); }\n",
            ),
            ("src/phases/mod.rs", "pub mod body;\n"),
            (
                "src/phases/body.rs",
                "pub fn send() { let _ = crate::flows::proxy::run; crate::kit::reply(); }\n",
            ),
            (
                "src/kit.rs",
                "pub fn reply() { let _ = crate::phases::body::send; }\n",
            ),
        ],
    );
    let (_, adapter) = f.check();
    let layers = adapter.layers.as_ref().unwrap();
    let bad: Vec<String> = layers
        .edges
        .iter()
        .map(|e| {
            format!(
                "{} -> {}: {}",
                adapter.graph.files[e.from].rel, adapter.graph.files[e.to].rel, e.why
            )
        })
        .collect();
    assert_eq!(
        bad,
        [
            "src/kit.rs -> src/phases/body.rs: kit imports phases",
            "src/phases/body.rs -> src/flows/proxy.rs: phases imports flows",
        ]
    );
    assert_eq!(layers.found["phases"], 2);
    assert_eq!(layers.found["kit"], 1);
    assert_eq!(layers.found["endpoints"], 0);
    let text = archcheck::render(&[adapter], false);
    assert!(text.contains("found: flows (2 files), kit (1 file), phases (2 files); not found: endpoints): 2 violations"), "{text}");
}

#[test]
fn leaves_test_only_code_comments_and_literals_alone() {
    let f = Fixture::new(
        "quiet",
        &[
            ("crates/core/src/lib.rs", "mod a;\nmod b;\nmod body;\n"),
            (
                "crates/core/src/a.rs",
                "pub fn a() -> &'static str {\n    // crate::b::B\n    \"crate::b::B\"\n}\n\
                 /* use crate::b::B; */\n\
                 #[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n\
                 #[cfg(test)]\nmod fixtures;\n\
                 #[test]\nfn t() { crate::b::f(); }\n\
                 #[cfg(all(test, feature = \"x\"))]\nuse crate::b::B as _;\n",
            ),
            ("crates/core/src/b.rs", "use crate::a::a;\npub struct B;\npub fn f() {}\n"),
            (
                "crates/core/src/body/mod.rs",
                "//! Bytes in, bytes out.\npub fn run() {}\n\
                 #[cfg(test)]\nmod tests {\n    /// Html, injected scripts.\n    fn html_stage() {}\n}\n",
            ),
        ],
    );
    let (core, adapter) = f.check();
    assert!(core.cycles.is_empty());
    assert_eq!(edges(&core), ["src/b.rs -> src/a.rs"]);
    assert!(
        core.is_clean(),
        "{}",
        archcheck::render(std::slice::from_ref(&core), true)
    );
    assert!(adapter.is_clean());
    let bin = env!("CARGO_BIN_EXE_archcheck");
    let status = Command::new(bin).arg(&f.root).output().unwrap();
    assert!(status.status.success(), "{status:?}");
}

#[test]
fn exits_non_zero_on_a_violation_and_on_a_missing_module_file() {
    let bin = env!("CARGO_BIN_EXE_archcheck");
    let cycle = Fixture::new(
        "exit-cycle",
        &[
            ("src/main.rs", "mod a;\nmod b;\nfn main() {}\n"),
            ("src/a.rs", "use super::b::B;\npub struct A;\n"),
            ("src/b.rs", "use super::a::A;\npub struct B;\n"),
        ],
    );
    let out = Command::new(bin).arg(&cycle.root).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("adapter: 3 modules, 1 cycle\n"), "{text}");
    let missing = Fixture::new("exit-missing", &[("crates/core/src/lib.rs", "mod gone;\n")]);
    let out = Command::new(bin).arg(&missing.root).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("core: error: src/lib.rs:1: `mod gone;` names no file"),
        "{text}"
    );
}
