//! The source model `tests/it/structure.rs` checks: every file under `src/`,
//! the modules its code refers to (read from its `use` trees, grouped
//! imports included, and from `crate::` / `super::` paths in its code, with
//! comments and string literals removed first), and the unit each belongs
//! to (a top-level module, or `analyses/<name>` for an analysis's folder).
//!
//! ```text
//!  src/analyses/ops/view.rs        use crate::command::{self, ApiError};
//!        │ unit analyses/ops                 │ refers to command
//!        └──────────────── edge ────────────►┘  (analyses/ops → command)
//! ```
//!
//! Test code is not an import: a `tests.rs` file, and each item a
//! `#[cfg(test)]` attribute gates (a `mod tests { … }`, a `mod tests;`
//! line, a test helper), wherever it stands, are left out; every other
//! line is read, also the lines after an early `#[cfg(test)] mod tests;`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One source file.
pub struct File {
    /// Its path under `src/`, with `/` separators.
    pub rel: String,
    /// Its module path (`["analyses", "ops", "view"]`).
    pub module: Vec<String>,
    /// Its code outside test items, comments and strings removed.
    pub code: String,
    /// Its lines outside the items `#[cfg(test)]` gates.
    pub code_lines: usize,
    /// The module paths its code refers to (resolved to `crate`).
    pub refs: Vec<Vec<String>>,
}

impl File {
    /// The unit this file belongs to.
    pub fn unit(&self) -> String {
        unit_of(&self.module)
    }

    /// The units this file refers to (other than its own; the crate root's
    /// re-exports resolved to the module that defines them).
    pub fn units(&self, roots: &BTreeMap<String, String>) -> BTreeSet<String> {
        let own = self.unit();
        self.refs
            .iter()
            .filter_map(|r| resolve_root(r, roots))
            .filter(|u| *u != own && u != "lib")
            .collect()
    }
}

/// The unit of a module path: its first segment, or `analyses/<name>`.
pub fn unit_of(module: &[String]) -> String {
    match module {
        [] => "lib".into(),
        [a, name, ..] if a == "analyses" => format!("analyses/{name}"),
        [first, ..] => first.clone(),
    }
}

/// A reference's unit; a name re-exported at the crate root
/// (`crate::Format`) is its defining module's.
fn resolve_root(r: &[String], roots: &BTreeMap<String, String>) -> Option<String> {
    let first = r.first()?;
    match roots.get(first) {
        Some(module) => Some(module.clone()),
        None => Some(unit_of(r)),
    }
}

/// Every source file under `src/`, tests left out, sorted by path.
pub fn load(src: &Path) -> Vec<File> {
    let mut out: Vec<File> = rust_files(src)
        .into_iter()
        .filter_map(|p| {
            let rel = p
                .strip_prefix(src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let is_test = rel.ends_with("/tests.rs") || rel.contains("/tests/");
            (!is_test).then(|| read(&p, rel))
        })
        .collect();
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

/// The crate root's `pub use` names and the unit defining each.
pub fn root_exports(files: &[File]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(lib) = files.iter().find(|f| f.rel == "lib.rs") {
        for path in use_paths(&lib.code, &[]) {
            if let (Some(name), true) = (path.last(), path.len() > 1) {
                out.insert(name.clone(), unit_of(&path));
            }
        }
    }
    out
}

fn read(path: &Path, rel: String) -> File {
    let text = fs::read_to_string(path).expect("read a source file");
    let (code, code_lines) = outside_tests(&text);
    let module = module_of(&rel);
    let mut refs = use_paths(&code, &module);
    refs.extend(inline_paths(&code, &module));
    if rel == "main.rs" {
        refs.extend(crate_paths(&code, "torchtrace"));
    }
    File {
        rel,
        module,
        code,
        code_lines,
        refs,
    }
}

/// `text` with comments and strings removed ([`strip`]) and every item a
/// `#[cfg(test)]` attribute gates left out — the attribute, the item's
/// other attributes, and the item to its `;` or its closing brace — and
/// the number of the file's lines outside those items.
///
/// ```text
///  fn a() {}              kept
///  #[cfg(test)]           ┐
///  mod tests;             ┘ left out (one line item)
///  use crate::api::x;     kept: read, though after `mod tests;`
///  #[cfg(test)]           ┐
///  mod more {             │ left out to its closing brace
///  }                      ┘
/// ```
pub fn outside_tests(text: &str) -> (String, usize) {
    let stripped = strip(text);
    let lines: Vec<&str> = stripped.split('\n').collect();
    let mut keep = vec![true; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        let Some(rest) = l.strip_prefix("#[cfg(test)]") else {
            i += 1;
            continue;
        };
        // The item: from the rest of this line, else the next line that
        // is neither empty nor another attribute.
        let mut j = i;
        let mut item = rest.trim().to_string();
        while item.is_empty() || item.starts_with("#[") {
            j += 1;
            match lines.get(j) {
                Some(next) => item = next.trim().to_string(),
                None => break,
            }
        }
        let end = item_end(&lines, j);
        for k in keep.iter_mut().take(end + 1).skip(i) {
            *k = false;
        }
        i = end + 1;
    }
    let code: Vec<&str> = lines
        .iter()
        .zip(&keep)
        .map(|(l, &k)| if k { *l } else { "" })
        .collect();
    let total = text.lines().count();
    let outside = keep.iter().take(total).filter(|k| **k).count();
    (code.join("\n"), outside)
}

/// The last line of the item starting at line `j`: the line of its `;`
/// when it ends before any brace, else the line where its braces close.
fn item_end(lines: &[&str], j: usize) -> usize {
    let mut depth = 0i64;
    let mut opened = false;
    for (k, l) in lines.iter().enumerate().skip(j) {
        for c in l.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                ';' if !opened && depth == 0 => return k,
                _ => {}
            }
            if opened && depth == 0 {
                return k;
            }
        }
    }
    lines.len().saturating_sub(1)
}

/// The module path of a file (`analyses/ops/mod.rs` → `analyses::ops`).
fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    if rel == "main.rs" {
        return vec!["main".into()];
    }
    parts
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("read a source directory") {
            let p = entry.expect("a directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// `text` with comments removed and string and char literals emptied, so
/// that a path in a doc comment or a message is not an import.
pub fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let end = skip_block_comment(b, i);
            newlines(&b[i..end.min(b.len())], &mut out);
            i = end;
        } else if let Some(end) = raw_string_end(b, i) {
            out.extend_from_slice(b"\"\"");
            newlines(&b[i..end.min(b.len())], &mut out);
            i = end;
        } else if b[i] == b'"' {
            let end = skip_string(b, i + 1);
            out.extend_from_slice(b"\"\"");
            newlines(&b[i..end.min(b.len())], &mut out);
            i = end;
        } else if let Some(end) = char_literal_end(b, i) {
            out.extend_from_slice(b"' '");
            i = end;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The newlines of a removed comment or string, kept so that the stripped
/// text's lines are the file's.
fn newlines(removed: &[u8], out: &mut Vec<u8>) {
    out.extend(removed.iter().filter(|&&c| c == b'\n'));
}

fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

fn skip_string(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'"' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    i + 1
}

/// The end of a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let body = j + 1;
    let end = b[body..]
        .windows(close.len())
        .position(|w| w == close.as_slice())
        .map_or(b.len(), |p| body + p + close.len());
    Some(end)
}

/// The end of a char literal (`'a'`, `'\n'`, `'\u{1F600}'`) at `i`; a
/// lifetime (`'a`) is none.
fn char_literal_end(b: &[u8], i: usize) -> Option<usize> {
    if b[i] != b'\'' {
        return None;
    }
    if b.get(i + 1) == Some(&b'\\') {
        let close = b[i + 2..].iter().take(12).position(|&c| c == b'\'')?;
        return Some(i + 2 + close + 1);
    }
    // One character (possibly multi-byte UTF-8) then a quote.
    let c = std::str::from_utf8(&b[i + 1..(i + 5).min(b.len())])
        .or_else(|e| std::str::from_utf8(&b[i + 1..i + 1 + e.valid_up_to()]))
        .ok()?
        .chars()
        .next()?;
    let after = i + 1 + c.len_utf8();
    (b.get(after) == Some(&b'\'')).then_some(after + 1)
}

/// The module paths of every `use` item in `code` (grouped trees
/// expanded), resolved against `module`; external crates left out.
pub fn use_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        let tree: String = after[..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for path in expand(&tree, &[]) {
            if let Some(p) = resolve(&path, module) {
                out.push(p);
            }
        }
        rest = &after[end..];
    }
    out
}

/// The `crate::…`, `super::…` and `self::…` paths written inline in code.
fn inline_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for root in ["crate", "super"] {
        for p in crate_paths(code, root) {
            let mut full = vec![root.to_string()];
            full.extend(p);
            if let Some(r) = resolve(&full, module) {
                out.push(r);
            }
        }
    }
    out
}

/// The segments after each `ROOT::` in code (`crate::a::b` → `[a, b]`).
fn crate_paths(code: &str, root: &str) -> Vec<Vec<String>> {
    let needle = format!("{root}::");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find(&needle) {
        let at = from + p;
        from = at + needle.len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let segs: Vec<String> = code[at + needle.len()..]
            .split("::")
            .map(|s| {
                s.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|s| !s.is_empty())
            .collect();
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// The offset of `word` as a whole word (an item keyword) in `text`.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = text[from..].find(word) {
        let at = from + p;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if boundary(before) && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// A use tree's paths: `a::{b, c::{d, self}}` → `a::b`, `a::c::d`, `a::c`.
pub fn expand(tree: &str, prefix: &[String]) -> Vec<Vec<String>> {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::").trim();
        let mut base = prefix.to_vec();
        base.extend(segments(head));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        return split_top(inner)
            .into_iter()
            .flat_map(|part| expand(part, &base))
            .collect();
    }
    let path = tree.split(" as ").next().unwrap_or_default();
    let mut out = prefix.to_vec();
    out.extend(segments(path));
    if out.last().is_some_and(|s| s == "self" || s == "*") {
        out.pop();
    }
    vec![out]
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// `inner` split on its top-level commas.
fn split_top(inner: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&inner[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// A path relative to the crate (`crate::a` → `[a]`, `super::b` from
/// `x::y` → `[x, b]`); `None` for an external crate's or a local name.
fn resolve(path: &[String], module: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some(module.iter().chain(&path[1..]).cloned().collect()),
        "super" => {
            let mut base = module.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

/// The strongly connected components of `graph` with more than one node:
/// the import circles (Tarjan's algorithm).
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = graph
        .iter()
        .flat_map(|(k, v)| std::iter::once(k).chain(v))
        .map(String::as_str)
        .collect();
    for v in nodes {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

/// The text of every `.rs` file under `dir`, tests included.
pub fn all_texts(dir: &Path) -> Vec<String> {
    rust_files(dir)
        .into_iter()
        .map(|p| fs::read_to_string(p).expect("read a source file"))
        .collect()
}
