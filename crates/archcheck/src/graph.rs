//! The file-level module graph of one crate: its module tree from the crate root's `mod`
//! declarations, and an edge from file A to file B for every path A writes that resolves into
//! B (following re-exports to the module that defines the name).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::lex::lex;
use crate::parse::{self, FileFacts, PathRef, Scope, UseKind};

/// One place a file names another: the path as written (a `use` leaf spelt out in full) and
/// its line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Naming {
    /// Line in the importing file.
    pub line: u32,
    /// The path, e.g. `crate::body::stage::BodyStage`.
    pub path: String,
}

/// A source file of the crate, reached from the crate root.
#[derive(Debug, Clone)]
pub struct FileNode {
    /// Path relative to the crate's directory, `/`-separated (`src/body/mod.rs`).
    pub rel: String,
    /// Its module path from the crate root (`["body"]`; empty for the root).
    pub module: Vec<String>,
    /// What it says, test-only code left out.
    pub facts: FileFacts,
}

/// The module graph of one crate.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// Every file reached, the crate root first.
    pub files: Vec<FileNode>,
    /// `(from, to)` file indexes → where `from` names `to`.
    pub edges: BTreeMap<(usize, usize), Vec<Naming>>,
    /// Problems reading the tree: a `mod` whose file is missing, a file that does not lex.
    pub errors: Vec<String>,
}

/// A module: a file's own, or an inline `mod x { … }` in it.
#[derive(Debug, Clone)]
struct Module {
    parent: Option<usize>,
    children: BTreeMap<String, usize>,
    file: usize,
    /// The scope inside `file` (empty for the file's own module).
    scope: Scope,
    /// Names bound by module-level `use`: name → the path it stands for.
    bindings: BTreeMap<String, Vec<String>>,
    /// Module-level `use …::*`.
    globs: Vec<Vec<String>>,
    /// Names defined here.
    defs: BTreeSet<String>,
}

/// How deep re-exports are followed before giving up (a re-export loop would not compile).
const MAX_HOPS: usize = 16;

impl Graph {
    /// Reads the crate whose root file is `crate_dir/root` (`src/lib.rs`, `src/main.rs`).
    pub fn build(crate_dir: &Path, root: &str) -> Graph {
        let mut b = Builder {
            crate_dir: crate_dir.to_path_buf(),
            graph: Graph::default(),
            modules: Vec::new(),
        };
        b.add_file(crate_dir.join(root), Vec::new(), None);
        b.link();
        b.graph
    }

    /// Index of the file with module path `module`, if reached.
    pub fn file_of_module(&self, module: &[&str]) -> Option<usize> {
        self.files.iter().position(|f| f.module == module)
    }

    /// Files `from` imports (edges out of it).
    pub fn targets(&self, from: usize) -> impl Iterator<Item = usize> + '_ {
        self.edges
            .keys()
            .filter(move |(f, _)| *f == from)
            .map(|&(_, t)| t)
    }

    /// The strongly connected components of more than one file, each sorted, in file order.
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        let n = self.files.len();
        let mut adjacency = vec![Vec::new(); n];
        for &(from, to) in self.edges.keys() {
            adjacency[from].push(to);
        }
        let mut components = tarjan(&adjacency);
        components.retain(|c| c.len() > 1);
        for c in &mut components {
            c.sort_unstable();
        }
        components.sort();
        components
    }

    /// A shortest cycle through `start` within `component`, as files in order (the first again
    /// at the end is implied).
    pub fn shortest_cycle(&self, start: usize, component: &[usize]) -> Vec<usize> {
        let inside: BTreeSet<usize> = component.iter().copied().collect();
        let mut previous: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            for next in self.targets(at).filter(|t| inside.contains(t)) {
                if next == start {
                    let mut path = vec![at];
                    while let Some(&p) = previous.get(path.last().unwrap_or(&start)) {
                        path.push(p);
                    }
                    path.reverse();
                    return path;
                }
                if let std::collections::btree_map::Entry::Vacant(e) = previous.entry(next) {
                    e.insert(at);
                    queue.push_back(next);
                }
            }
        }
        vec![start]
    }
}

/// Tarjan's algorithm, iterative.
fn tarjan(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = adjacency.len();
    let (mut index, mut low) = (vec![usize::MAX; n], vec![0; n]);
    let (mut on_stack, mut stack) = (vec![false; n], Vec::new());
    let (mut next_index, mut components) = (0, Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == usize::MAX {
                index[v] = next_index;
                low[v] = next_index;
                next_index += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = adjacency[v].get(*child) {
                *child += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

struct Builder {
    crate_dir: PathBuf,
    graph: Graph,
    modules: Vec<Module>,
}

fn is_mod_rs(path: &Path) -> bool {
    matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("mod.rs" | "lib.rs" | "main.rs")
    )
}

impl Builder {
    fn rel(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.crate_dir).unwrap_or(path);
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Reads `path` as module `module` (child of module `parent`), then the files it declares.
    fn add_file(&mut self, path: PathBuf, module: Vec<String>, parent: Option<usize>) -> usize {
        let file = self.graph.files.len();
        let facts = match fs::read_to_string(&path) {
            Ok(source) => match lex(&source) {
                Ok(tokens) => parse::read(&tokens),
                Err(e) => {
                    let rel = self.rel(&path);
                    self.graph
                        .errors
                        .push(format!("{rel}:{}: unterminated {}", e.line, e.what));
                    FileFacts::default()
                }
            },
            Err(e) => {
                let rel = self.rel(&path);
                self.graph.errors.push(format!("{rel}: {e}"));
                FileFacts::default()
            }
        };
        self.graph.files.push(FileNode {
            rel: self.rel(&path),
            module: module.clone(),
            facts: facts.clone(),
        });
        let top = self.new_module(parent, file, Vec::new());
        if let Some(p) = parent {
            let name = module.last().cloned().unwrap_or_default();
            self.modules[p].children.insert(name, top);
        }
        // Inline modules, outer ones first (they are listed in source order).
        let mut by_scope: BTreeMap<Scope, usize> = BTreeMap::from([(Vec::new(), top)]);
        for scope in &facts.inline_mods {
            let (name, outer) = scope.split_last().expect("an inline module has a name");
            let outer_id = by_scope.get(outer).copied().unwrap_or(top);
            let id = self.new_module(Some(outer_id), file, scope.clone());
            self.modules[outer_id].children.insert(name.clone(), id);
            by_scope.insert(scope.clone(), id);
        }
        for (scope, name) in &facts.defs {
            if let Some(&m) = by_scope.get(scope) {
                self.modules[m].defs.insert(name.clone());
            }
        }
        for p in facts.paths.iter().filter(|p| p.module_level) {
            let Some(&m) = by_scope.get(&p.scope) else {
                continue;
            };
            match &p.use_kind {
                Some(UseKind::Name(Some(alias))) => {
                    self.modules[m]
                        .bindings
                        .insert(alias.clone(), p.segs.clone());
                }
                Some(UseKind::Glob) => self.modules[m].globs.push(p.segs.clone()),
                _ => {}
            }
        }
        // Files of `mod x;`: `x.rs` or `x/mod.rs` in this module's directory.
        let dir = if is_mod_rs(&path) {
            path.parent().map(Path::to_path_buf).unwrap_or_default()
        } else {
            path.with_extension("")
        };
        for decl in &facts.mods {
            let mut sub = dir.clone();
            sub.extend(&decl.scope);
            let candidates = match &decl.path_attr {
                Some(p) if decl.scope.is_empty() => {
                    vec![path.parent().map(|d| d.join(p)).unwrap_or_default()]
                }
                Some(p) => vec![sub.join(p)],
                None => vec![
                    sub.join(format!("{}.rs", decl.name)),
                    sub.join(&decl.name).join("mod.rs"),
                ],
            };
            let mut child_module = module.clone();
            child_module.extend(decl.scope.iter().cloned());
            child_module.push(decl.name.clone());
            let owner = by_scope.get(&decl.scope).copied().unwrap_or(top);
            match candidates.into_iter().find(|c| c.is_file()) {
                Some(found) => {
                    self.add_file(found, child_module, Some(owner));
                }
                None => {
                    let rel = self.rel(&path);
                    self.graph.errors.push(format!(
                        "{rel}:{}: `mod {};` names no file ({}/{}.rs or {}/mod.rs)",
                        decl.line,
                        decl.name,
                        self.rel(&sub),
                        decl.name,
                        decl.name
                    ));
                }
            }
        }
        file
    }

    fn new_module(&mut self, parent: Option<usize>, file: usize, scope: Scope) -> usize {
        self.modules.push(Module {
            parent,
            children: BTreeMap::new(),
            file,
            scope,
            bindings: BTreeMap::new(),
            globs: Vec::new(),
            defs: BTreeSet::new(),
        });
        self.modules.len() - 1
    }

    /// Module of `scope` in `file`.
    fn module_at(&self, file: usize, scope: &Scope) -> Option<usize> {
        self.modules
            .iter()
            .position(|m| m.file == file && &m.scope == scope)
    }

    /// Where a path written in module `ctx` starts: `crate`, `super`, `self`, a child module, or
    /// a name `ctx` binds. `None` for anything outside the crate.
    fn resolve(&self, ctx: usize, segs: &[String], hops: usize) -> Option<usize> {
        let first = segs.first()?;
        let (start, rest) = match first.as_str() {
            "crate" => (0, &segs[1..]),
            "self" => (ctx, &segs[1..]),
            "super" => {
                let mut at = ctx;
                let mut i = 0;
                while segs.get(i).map(String::as_str) == Some("super") {
                    at = self.modules[at].parent?;
                    i += 1;
                }
                (at, &segs[i..])
            }
            "::" => return None,
            name => {
                if self.modules[ctx].children.contains_key(name) {
                    (ctx, segs)
                } else if let Some(bound) = self.modules[ctx].bindings.get(name) {
                    if hops >= MAX_HOPS || bound.len() == 1 && bound[0] == *name {
                        return None;
                    }
                    let mut full = bound.clone();
                    full.extend(segs[1..].iter().cloned());
                    return self.resolve(ctx, &full, hops + 1);
                } else {
                    return None;
                }
            }
        };
        Some(self.walk(start, rest, hops))
    }

    /// From module `at`, the longest run of `segs` that names modules, then the module that
    /// defines the next name (following a `use` that binds it there, or a glob that brings it).
    fn walk(&self, mut at: usize, segs: &[String], hops: usize) -> usize {
        let mut i = 0;
        while let Some(&child) = segs.get(i).and_then(|s| self.modules[at].children.get(s)) {
            at = child;
            i += 1;
        }
        let Some(name) = segs.get(i) else {
            return at;
        };
        if hops >= MAX_HOPS || self.modules[at].defs.contains(name) {
            return at;
        }
        if let Some(bound) = self.modules[at].bindings.get(name) {
            let mut full = bound.clone();
            full.extend(segs[i + 1..].iter().cloned());
            // Bound to something outside the crate: the name is this module's to give.
            return self.resolve(at, &full, hops + 1).unwrap_or(at);
        }
        for glob in &self.modules[at].globs {
            if let Some(source) = self.resolve(at, glob, hops + 1) {
                let m = &self.modules[source];
                if source != at && (m.defs.contains(name) || m.bindings.contains_key(name)) {
                    return self.walk(source, &segs[i..], hops + 1);
                }
            }
        }
        at
    }

    /// Every edge between files.
    fn link(&mut self) {
        let mut edges: BTreeMap<(usize, usize), BTreeSet<Naming>> = BTreeMap::new();
        for (file, node) in self.graph.files.iter().enumerate() {
            for p in &node.facts.paths {
                if let Some(to) = self.target(file, p) {
                    if to != file {
                        edges.entry((file, to)).or_default().insert(Naming {
                            line: p.line,
                            path: p.segs.join("::"),
                        });
                    }
                }
            }
        }
        self.graph.edges = edges
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .collect();
    }

    fn target(&self, file: usize, p: &PathRef) -> Option<usize> {
        let ctx = self.module_at(file, &p.scope)?;
        let m = self.resolve(ctx, &p.segs, 0)?;
        Some(self.modules[m].file)
    }
}
