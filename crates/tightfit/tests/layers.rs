//! The engine's module layering, read from its sources: no import circle among the modules of
//! one folder (at every level), `steps` never reaches into `compat`, `tokens` never into
//! `steps`, and a step imports the core and `steps::shared`, never a sibling step.
//!
//! Each source file is a module (`src/steps/keep_last.rs` is `steps::keep_last`, a `mod.rs` is
//! its folder). Its references are every `crate::…` path and every `super::…` path in its code
//! (doc comments, comments and `#[cfg(test)]` modules left out), nested `use` groups expanded,
//! each resolved to the deepest module the path names. A reference from inside sibling A's
//! subtree to inside sibling B's is an edge A → B; a child's use of its parent's own items is
//! not an edge between siblings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path, `["steps", "keep_last"]`; the crate root is `[]`.
type Module = Vec<String>;

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(path: &Path) -> Module {
    let relative = path.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Module = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a file without comments and without its `#[cfg(test)]` modules; also the
/// names of the child modules it declares under `#[cfg(test)]` (test-only files).
fn code(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_children = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            // the next item: an inline module (skipped to its closing brace) or a file module
            while let Some(next) = lines.peek() {
                if next.trim_start().starts_with("#[") {
                    lines.next();
                } else {
                    break;
                }
            }
            let Some(item) = lines.next() else { break };
            let item = item.trim();
            if let Some(name) = item.strip_prefix("mod ").or_else(|| item.strip_prefix("pub(crate) mod ")) {
                if let Some(name) = name.strip_suffix(';') {
                    test_children.push(name.trim().to_string());
                    continue;
                }
                let mut depth = item.matches('{').count() as i64 - item.matches('}').count() as i64;
                for inner in lines.by_ref() {
                    depth += inner.matches('{').count() as i64 - inner.matches('}').count() as i64;
                    if depth <= 0 {
                        break;
                    }
                }
                continue;
            }
            out.push_str(item);
            out.push('\n');
            continue;
        }
        let line = match line.find(" //") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    (out, test_children)
}

/// Expands `a::{b, c::{d, e}}` (the text after `crate::` or `super::`) into paths.
fn expand(text: &str) -> Vec<String> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = text.find('{') else {
        return vec![text];
    };
    let prefix = &text[..open];
    let mut depth = 0;
    let mut close = open;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = open + i;
                    break;
                }
            }
            _ => {}
        }
    }
    let inner = &text[open + 1..close];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items.into_iter().filter(|i| !i.is_empty()).flat_map(expand).map(|i| format!("{prefix}{i}")).collect()
}

/// The paths a file's code names through `crate::` and `super::`, as module-relative segments
/// (`super` resolved against `module`, which for a `mod.rs` is its folder).
fn references(code: &str, module: &Module, is_folder: bool) -> Vec<Module> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for keyword in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(keyword) {
            let start = from + at;
            from = start + keyword.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            // the path: identifiers, `::`, and a balanced `{...}` group
            let rest = &code[from..];
            let mut end = 0;
            let mut depth = 0;
            for (i, c) in rest.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth > 0 => depth -= 1,
                    c if depth > 0 || c.is_alphanumeric() || c == '_' || c == ':' => {}
                    _ => {
                        end = i;
                        break;
                    }
                }
                end = i + c.len_utf8();
            }
            let mut base: Module = if keyword == "crate::" {
                Vec::new()
            } else {
                let mut parent = module.clone();
                if !is_folder {
                    parent.pop();
                }
                parent
            };
            for path in expand(&rest[..end]) {
                let mut segments: Vec<String> =
                    path.split("::").filter(|s| !s.is_empty()).map(String::from).collect();
                // `super::super::x`
                while segments.first().map(String::as_str) == Some("super") {
                    segments.remove(0);
                    base.pop();
                }
                let mut full = base.clone();
                full.extend(segments);
                out.push(full);
            }
        }
    }
    out
}

struct Tree {
    /// Every module, and the modules it refers to (resolved to the deepest known module).
    edges: BTreeMap<Module, BTreeSet<Module>>,
}

fn tree() -> Tree {
    let mut paths = Vec::new();
    files(&src(), &mut paths);
    let mut sources = BTreeMap::new();
    let mut test_only = BTreeSet::new();
    for path in &paths {
        let module = module_of(path);
        let is_folder = matches!(path.file_stem().and_then(|s| s.to_str()), Some("mod" | "lib"));
        let (code, test_children) = code(&std::fs::read_to_string(path).unwrap());
        for child in test_children {
            let mut m = module.clone();
            m.push(child);
            test_only.insert(m);
        }
        sources.insert(module, (code, is_folder));
    }
    let known: BTreeSet<Module> = sources.keys().cloned().collect();
    let resolve = |path: &Module| -> Module {
        (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| known.contains(m)).unwrap_or_default()
    };
    let mut edges = BTreeMap::new();
    for (module, (code, is_folder)) in &sources {
        if test_only.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        let targets =
            references(code, module, *is_folder).iter().map(&resolve).filter(|t| t != module).collect();
        edges.insert(module.clone(), targets);
    }
    Tree { edges }
}

/// Edges between the children of `parent`: child A → child B when a module under A refers to
/// a module under B.
fn sibling_edges(tree: &Tree, parent: &Module) -> BTreeMap<String, BTreeSet<String>> {
    let child = |m: &Module| -> Option<String> {
        (m.len() > parent.len() && m.starts_with(parent)).then(|| m[parent.len()].clone())
    };
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in &tree.edges {
        let Some(a) = child(from) else { continue };
        for to in targets {
            if let Some(b) = child(to) {
                if a != b {
                    out.entry(a.clone()).or_default().insert(b);
                }
            }
        }
    }
    out
}

/// A cycle in `edges`, if any, as the list of its nodes.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|n| n == next).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(cycle) = visit(next, edges, state, stack) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if state.get(node).copied().unwrap_or(0) == 0 {
            if let Some(cycle) = visit(node, edges, &mut state, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

fn module(path: &str) -> Module {
    path.split("::").filter(|s| !s.is_empty()).map(String::from).collect()
}

#[test]
fn no_import_circle_among_the_modules_of_any_folder() {
    let tree = tree();
    let mut folders: BTreeSet<Module> = BTreeSet::new();
    for m in tree.edges.keys() {
        for n in 0..m.len() {
            folders.insert(m[..n].to_vec());
        }
    }
    let mut circles = Vec::new();
    for folder in &folders {
        if let Some(cycle) = find_cycle(&sibling_edges(&tree, folder)) {
            circles.push(format!("in crate::{}: {}", folder.join("::"), cycle.join(" → ")));
        }
    }
    assert!(circles.is_empty(), "import circles:\n{}", circles.join("\n"));
    // the checker sees edges at all (a parse that found nothing would pass vacuously)
    let top = sibling_edges(&tree, &Vec::new());
    assert!(top.get("fit").is_some_and(|t| t.contains("history") && t.contains("pipeline")), "{top:?}");
}

#[test]
fn steps_do_not_reach_into_compat_and_tokens_not_into_steps() {
    let tree = tree();
    let mut wrong = Vec::new();
    for (lower, upper) in [("steps", "compat"), ("tokens", "steps"), ("tokens", "compat")] {
        for (from, targets) in &tree.edges {
            if from.starts_with(&module(lower)) {
                for to in targets.iter().filter(|t| t.starts_with(&module(upper))) {
                    wrong.push(format!("{} → {}", from.join("::"), to.join("::")));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
    // compat does use the steps (the checker sees that edge)
    assert!(sibling_edges(&tree, &Vec::new()).get("compat").is_some_and(|t| t.contains("steps")));
}

#[test]
fn a_step_imports_steps_shared_and_no_sibling_step() {
    let tree = tree();
    let edges = sibling_edges(&tree, &module("steps"));
    let mut wrong = Vec::new();
    for (from, targets) in &edges {
        for to in targets {
            let allowed = to == "shared" || from == "test_support";
            if !allowed {
                wrong.push(format!("steps::{from} → steps::{to}"));
            }
        }
    }
    assert!(wrong.is_empty(), "a step imports a sibling:\n{}", wrong.join("\n"));
    assert!(edges.get("keep_last").is_some_and(|t| t.contains("shared")), "{edges:?}");
}

#[test]
fn the_reference_reader_expands_use_groups_and_resolves_super() {
    assert_eq!(expand("a::{b, c::{d, e}}"), ["a::b", "a::c::d", "a::c::e"]);
    let refs = references(
        "use super::shared::keep::{read_keep, protected_messages};\nuse crate::{history::History, units};\n",
        &module("steps::keep_last"),
        false,
    );
    assert!(refs.contains(&module("steps::shared::keep::read_keep")), "{refs:?}");
    assert!(refs.contains(&module("history::History")), "{refs:?}");
    assert!(refs.contains(&module("units")), "{refs:?}");
    let (code, tests) = code("use crate::a;\n/// crate::b\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\n#[cfg(test)]\nmod extra;\n");
    assert!(code.contains("crate::a") && !code.contains("crate::b") && !code.contains("crate::c"), "{code}");
    assert_eq!(tests, ["extra"]);
}
