//! The structure rules of docs/ARCHITECTURE.md ("Layers: what may import
//! what"), checked on the source: every file's `use` trees (grouped
//! imports too) and `crate::`/`super::` paths make a graph between units
//! (top-level modules, and each analysis's folder); the graph has no
//! circle, every edge goes down the layer table that ARCHITECTURE.md
//! holds (read from it here), an analysis is named outside its folder only
//! by the registry, the analyses come from `registry::REGISTRY`, no file is
//! over 800 lines outside its test items, the rule ids the code cites are
//! defined in docs/VIEWS.md, and the shared bodies (`Document::completeness`,
//! the per-thread op-run store of `hostops::runs`) have no copy.

#[path = "structure/model.rs"]
mod model;

use model::File;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn src(rel: &str) -> PathBuf {
    root().join("src").join(rel)
}

/// Every source file, tests left out (read once per test binary).
fn files() -> &'static [File] {
    static FILES: std::sync::OnceLock<Vec<File>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| model::load(&src("")))
}

/// The registry's analyses, in its order.
fn analyses() -> Vec<&'static str> {
    torchtrace::registry::REGISTRY
        .iter()
        .map(|e| e.name)
        .collect()
}

/// The unit graph: unit → the units its files refer to.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let roots = model::root_exports(files());
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files().iter().filter(|f| f.rel != "lib.rs") {
        g.entry(f.unit()).or_default().extend(f.units(&roots));
    }
    // Only units that exist (a path into an external crate's namesake is not one).
    let known: BTreeSet<String> = g.keys().cloned().collect();
    for targets in g.values_mut() {
        targets.retain(|t| known.contains(t));
    }
    g
}

/// Which files of `unit` refer to `target` (for messages).
fn files_of(unit: &str, target: &str) -> Vec<String> {
    let roots = model::root_exports(files());
    files()
        .iter()
        .filter(|f| f.unit() == unit && f.units(&roots).contains(target))
        .map(|f| f.rel.clone())
        .collect()
}

/// The layer table of docs/ARCHITECTURE.md, top first: each unit's rank
/// (higher = above); `analyses/*` stands for every analysis's folder.
fn layers() -> Vec<(String, Vec<String>)> {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("read ARCHITECTURE");
    let marker = "<!-- layers: read by tests/it/structure.rs -->";
    let at = doc.find(marker).expect("the layer table's marker");
    let block = &doc[at + marker.len()..];
    let start = block.find("```text\n").expect("the layer table") + 8;
    let end = start + block[start..].find("```").expect("its end");
    block[start..end]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut words = l.split_whitespace().map(String::from);
            let name = words.next().expect("a layer name");
            (name, words.collect())
        })
        .collect()
}

fn rank_of(layers: &[(String, Vec<String>)]) -> BTreeMap<String, usize> {
    let n = layers.len();
    let mut out = BTreeMap::new();
    for (i, (_, units)) in layers.iter().enumerate() {
        for u in units {
            out.insert(u.clone(), n - i);
        }
    }
    out
}

fn rank(ranks: &BTreeMap<String, usize>, unit: &str) -> Option<usize> {
    ranks.get(unit).copied().or_else(|| {
        unit.starts_with("analyses/")
            .then(|| ranks.get("analyses/*").copied())
            .flatten()
    })
}

#[test]
fn no_circle_of_imports_across_units() {
    let circles = model::circles(&graph());
    let shown: Vec<String> = circles
        .iter()
        .map(|c| {
            let edges: Vec<String> = c
                .iter()
                .flat_map(|u| c.iter().map(move |v| (u, v)))
                .filter(|(u, v)| u != v && !files_of(u, v).is_empty())
                .map(|(u, v)| format!("{u} → {v} ({})", files_of(u, v).join(", ")))
                .collect();
            edges.join("; ")
        })
        .collect();
    assert!(circles.is_empty(), "import circles: {shown:#?}");
}

#[test]
fn every_import_goes_down_the_documented_layers() {
    let layers = layers();
    let ranks = rank_of(&layers);
    let g = graph();
    let mut unlisted = Vec::new();
    let mut upward = Vec::new();
    for (u, targets) in &g {
        let Some(ru) = rank(&ranks, u) else {
            unlisted.push(u.clone());
            continue;
        };
        for v in targets {
            if let Some(rv) = rank(&ranks, v) {
                if rv > ru {
                    upward.push(format!("{u} → {v} ({})", files_of(u, v).join(", ")));
                }
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "units missing from ARCHITECTURE.md's layer table: {unlisted:?}"
    );
    assert!(upward.is_empty(), "imports against the layers: {upward:#?}");
    // The table names real units only (a renamed module is not left behind).
    for (_, units) in &layers {
        for u in units.iter().filter(|u| *u != "analyses/*") {
            assert!(
                g.contains_key(u),
                "the layer table names {u}, which is not a unit"
            );
        }
    }
}

#[test]
fn an_analysis_is_named_outside_its_folder_only_by_the_registry() {
    // How to add an analysis: its folder, `pub mod` in analyses/mod.rs,
    // its line in the registry. No other unit names it, and analyses do
    // not name each other.
    let g = graph();
    let names = analyses();
    assert!(names.len() >= 8, "the registry lists {names:?}");
    for n in &names {
        let unit = format!("analyses/{n}");
        assert!(g.contains_key(&unit), "{n} has no folder");
        let users: Vec<&String> = g
            .iter()
            .filter(|(_, t)| t.contains(&unit))
            .map(|(u, _)| u)
            .collect();
        let outside: Vec<(&&String, Vec<String>)> = users
            .iter()
            .filter(|u| !["analyses", "registry"].contains(&u.as_str()))
            .map(|u| (u, files_of(u, &unit)))
            .collect();
        assert!(
            outside.is_empty(),
            "{n} is named outside its folder: {outside:?}"
        );
        assert!(
            users.iter().any(|u| *u == "registry"),
            "{n} has no registry line"
        );
    }
    // Every analysis folder is declared in analyses/mod.rs and listed in
    // the registry.
    let decl = files()
        .iter()
        .find(|f| f.rel == "analyses/mod.rs")
        .expect("analyses/mod.rs");
    for n in &names {
        assert!(
            decl.code.contains(&format!("pub mod {n};")),
            "{n}: no `pub mod`"
        );
    }
    let folders: BTreeSet<String> = g
        .keys()
        .filter_map(|u| u.strip_prefix("analyses/").map(String::from))
        .collect();
    let listed: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    assert_eq!(
        folders, listed,
        "folders under src/analyses/ vs the registry"
    );
}

#[test]
fn grouped_imports_are_read() {
    // The parser sees through groups, renames, `self` and `super`.
    let paths = model::use_paths(
        "use crate::{api, command::{self, Said as S}, analyses::{ops::view}}; use super::x;",
        &["analyses".into(), "ops".into()],
    );
    let shown: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        shown,
        [
            "api",
            "command",
            "command::Said",
            "analyses::ops::view",
            "analyses::x"
        ]
    );
    // A path in a comment or a string is not an import.
    let code = model::strip("// use crate::api;\nlet s = \"crate::api::run\"; let c = '\"';");
    assert!(!code.contains("api"), "{code}");
    // A `#[cfg(test)]` gate leaves out only the item it gates: a test
    // helper, an inline `mod tests { … }` with nested braces, a `mod
    // tests;` line. Every other line is read, also after an early
    // `mod tests;` (four files once hid 1 839 lines behind one).
    let text = "fn a() {}\n#[cfg(test)]\nfn helper() {\n    if x { y() }\n}\nfn b() {}\n#[cfg(test)]\nmod tests {\n    fn t() { let s = \"}\"; }\n}\n";
    let (code, lines) = model::outside_tests(text);
    assert_eq!(lines, 2, "{code}");
    assert!(code.contains("fn a()") && code.contains("fn b()"), "{code}");
    assert!(
        !code.contains("helper") && !code.contains("fn t()"),
        "{code}"
    );
    let early = "#[cfg(test)]\nmod tests;\n\nuse crate::api::run_named;\n#[cfg(test)] #[allow(dead_code)]\nfn h() {}\nfn c() {}\n";
    let (code, lines) = model::outside_tests(early);
    assert_eq!(lines, 3, "{code}");
    let paths = model::use_paths(&code, &["analyses".into(), "ops".into()]);
    assert_eq!(
        paths,
        vec![vec!["api".to_string(), "run_named".to_string()]],
        "{code}"
    );
    // A block comment or a string over several lines keeps the lines.
    let (_, lines) =
        model::outside_tests("/* a\nb */\nlet s = \"x\ny\";\n#[cfg(test)]\nmod tests;\n");
    assert_eq!(lines, 4);
}

#[test]
fn no_source_file_is_over_800_lines_outside_its_tests() {
    let long: Vec<String> = files()
        .iter()
        .filter(|f| f.code_lines > 800)
        .map(|f| format!("{}: {} lines", f.rel, f.code_lines))
        .collect();
    assert!(
        long.is_empty(),
        "over 800 lines outside test items: {long:#?}"
    );
    assert!(files().iter().any(|f| f.rel == "ledger/collector.rs"));
}

#[test]
fn every_rule_id_the_code_cites_is_defined_in_the_repository() {
    // C1–C8, O1–O10, I1–I6, M1–M6 are defined in docs/VIEWS.md, the repository's
    // own copy: the code depends on no file outside the checkout.
    let views = fs::read_to_string(root().join("docs/VIEWS.md")).expect("read docs/VIEWS.md");
    let defined: BTreeSet<String> = views
        .lines()
        .filter_map(|l| l.strip_prefix("**"))
        .filter_map(|l| l.split_whitespace().next())
        .map(|id| id.trim_end_matches('.').to_string())
        .collect();
    let mut cited = BTreeSet::new();
    for f in model::all_texts(&src("")) {
        for id in rule_ids(&prose(&f)) {
            cited.insert(id);
        }
    }
    assert!(cited.len() >= 20, "cited: {cited:?}");
    let missing: Vec<&String> = cited.iter().filter(|c| !defined.contains(*c)).collect();
    assert!(
        missing.is_empty(),
        "cited but not defined in docs/VIEWS.md: {missing:?}"
    );
    // Nothing in src/ points at the shared folder for a definition.
    for f in model::all_texts(&src("")) {
        assert!(
            !f.contains("shared/docs/"),
            "a source file cites ../shared/docs"
        );
    }
}

/// The prose of a source file, where rules are cited: its comments and
/// the text of its string literals (help texts, report notes), a line at
/// a time (an enum variant `I32` is not a rule), less the drawings in
/// ```` ```text ```` blocks (a timeline's labels `G2@2` are not rules).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut drawing = false;
    for line in text.lines() {
        if line.contains("```") {
            drawing = line.contains("```text");
            continue;
        }
        if drawing {
            continue;
        }
        if let Some(at) = line.find("//") {
            out.push_str(&line[at..]);
            out.push('\n');
        }
        let code = line.split("//").next().unwrap_or_default();
        for (i, part) in code.split('"').enumerate() {
            if i % 2 == 1 {
                out.push_str(part);
                out.push('\n');
            }
        }
    }
    out
}

/// The rule ids (`C4`, `O10`, `I6`, `M4`, `G2`, `P3`) in `text`, also in ranges (`C1–C8`).
fn rule_ids(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        if !matches!(c, b'C' | b'O' | b'I' | b'M' | b'G' | b'P') {
            continue;
        }
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            continue;
        }
        let digits: String = b[i + 1..]
            .iter()
            .take_while(|d| d.is_ascii_digit())
            .map(|&d| d as char)
            .collect();
        let next = b.get(i + 1 + digits.len());
        let ends = next.is_none_or(|n| !(n.is_ascii_alphanumeric() || *n == b'_'));
        if !digits.is_empty() && digits.len() <= 2 && ends {
            out.push(format!("{}{}", c as char, digits));
        }
    }
    out
}

/// The files under `dir` (a folder or a file under src/) whose code
/// (comments and strings left out) contains any of `needles`.
fn naming(dir: &str, needles: &[&str]) -> Vec<String> {
    files()
        .iter()
        .filter(|f| f.rel == dir || f.rel.starts_with(&format!("{dir}/")))
        .filter(|f| needles.iter().any(|n| f.code.contains(n)))
        .map(|f| f.rel.clone())
        .collect()
}

#[test]
fn each_analysis_draws_its_figures_in_its_folder() {
    // The paper's six figures are drawn in their analyses' folders, on
    // the kit; hierarchy owns its chains (nothing of the kit's).
    for (a, n) in [("pair", 4), ("hierarchy", 1), ("kernels", 1)] {
        let drawn: usize = files()
            .iter()
            .filter(|f| f.rel.starts_with(&format!("analyses/{a}/")))
            .map(|f| f.code.matches("impl Drawing for ").count())
            .sum();
        assert_eq!(drawn, n, "{a} draws {drawn} of the paper's figures");
    }
    let bad = naming("analyses/hierarchy", &["crate::plot::DEFAULT"]);
    assert!(bad.is_empty(), "hierarchy reads plot's chains: {bad:#?}");
    let fam = fs::read_to_string(src("families.rs")).expect("read families.rs");
    assert!(fam.contains("pub const FAMILIES"));
}

#[test]
fn the_campaign_hooks_are_one_trait_in_each_analysis_batch_file() {
    // command::Command holds the per-trace items only; what an analysis
    // gives a campaign is `campaign::InBatch`, implemented in its
    // batch.rs, and its view.rs does not call its batch.rs.
    let bad = naming("command", &["campaign", "fn batch_", "IN_BATCH"]);
    assert!(
        bad.is_empty(),
        "command::Command holds campaign hooks: {bad:#?}"
    );
    // The analyses `batch` runs (their registry lines carry the hooks).
    let in_batch = torchtrace::registry::REGISTRY
        .iter()
        .filter(|e| e.facts_fn().is_some());
    for a in in_batch.map(|e| e.name) {
        let view = naming(&format!("analyses/{a}/view.rs"), &["batch::", "fn batch_"]);
        assert!(
            view.is_empty(),
            "{a}'s view.rs calls its batch.rs: {view:#?}"
        );
        let batch = fs::read_to_string(src(&format!("analyses/{a}/batch.rs"))).expect("read");
        assert!(batch.contains("impl InBatch for"), "{a}: no impl InBatch");
    }
}

#[test]
fn each_subcommand_is_its_flags_and_one_per_trace_line() {
    // Every analysis's subcommand (flags, help) is in its folder's cli.rs
    // and reaches the binary through its registry line; the body that
    // reads, reports and exits is the kit's one `PerTrace<A>`, not a copy.
    for a in analyses() {
        assert!(
            !src(&format!("cli/{a}.rs")).exists(),
            "{a}'s subcommand is outside its folder"
        );
        let cli = format!("analyses/{a}/cli.rs");
        let file = files()
            .iter()
            .find(|f| f.rel == cli)
            .expect("an analysis's cli.rs");
        assert!(
            file.code.contains("impl PerTraceArgs for"),
            "{cli}: no PerTraceArgs"
        );
        for copied in [
            "fn run(",
            "impl SubcommandArgs",
            "run_command",
            "fn inputs(",
        ] {
            assert!(
                !file.code.contains(copied),
                "{cli} copies the kit's body ({copied})"
            );
        }
    }
    let reg = fs::read_to_string(src("registry.rs")).expect("read registry.rs");
    assert!(
        reg.contains("with_cli::<"),
        "the registry names no subcommand"
    );
    // `--tokens` is declared once, in the kit (`TokensArgs`, flattened
    // into the run group and into hierarchy's and plot's flags).
    let kit = fs::read_to_string(src("cli_kit.rs")).expect("read cli_kit.rs");
    assert_eq!(kit.matches("pub tokens: Vec<u64>").count(), 1);
    assert!(naming("analyses", &["pub tokens: Vec<u64>"]).is_empty());
    assert!(naming("cli", &["pub tokens: Vec<u64>"]).is_empty());
}

#[test]
fn export_and_ops_share_the_host_links_through_a_neutral_module() {
    // `export` writes ops' links as tables; both build on src/hostops/
    // (C1–C5, O6) and keep ops' C1–C2 through `HostLinks::keep`: `ops`
    // (with `roofline` and `idle`) through the per-trace host store, the
    // engine's collector, which none of them keeps a copy of.
    let store = fs::read_to_string(src("hostops/store.rs")).expect("read the host store");
    assert!(store.contains("links: HostLinks,"));
    assert!(store.contains("self.links.keep(ev, at)"));
    assert!(store.contains("impl Collector for HostStore"));
    for a in ["ops", "roofline", "idle"] {
        let code = fs::read_to_string(src(&format!("analyses/{a}/mod.rs"))).expect("read");
        assert!(
            code.contains("Use::of::<HostStore>"),
            "{a} uses the host store"
        );
        assert!(
            !code.contains("links: HostLinks"),
            "{a} keeps host links of its own"
        );
    }
    let export = fs::read_to_string(src("export/mod.rs")).expect("read export");
    assert!(export.contains("links: HostLinks,"));
    assert!(export.contains("self.links.keep(ev, at)"));
}

#[test]
fn each_subcommand_parses_no_flag_into_its_options_default() {
    // Defaults are defined once: the flags' defaults are the options'
    // `Default` (what Python and records take when a key is missing).
    let mut checked = 0;
    for e in torchtrace::registry::REGISTRY {
        let Some(line) = e.cli() else { continue };
        let parsed = (line.parsed_defaults)().unwrap_or_else(|why| panic!("{}: {why}", e.name));
        assert_eq!(
            parsed,
            (line.default_options)(),
            "{}: flag defaults differ",
            e.name
        );
        checked += 1;
    }
    assert_eq!(checked, analyses().len());
}

#[test]
fn the_shared_bodies_are_not_copied() {
    // A report gives its traces (`Document::outcomes`); the exit status's
    // reading of them is the trait's one provided body.
    let copied: Vec<&str> = files()
        .iter()
        .filter(|f| f.rel != "command/mod.rs" && f.code.contains("fn completeness("))
        .map(|f| f.rel.as_str())
        .collect();
    assert!(
        copied.is_empty(),
        "Document::completeness re-implemented: {copied:#?}"
    );
    // One per-thread op-run store (hostops/runs.rs): the host store (for
    // ops and roofline) and export keep their records in it, and no other
    // file grows doubling chunks of records (`CHUNK_MAX`) of its own.
    for (file, record) in [
        ("hostops/store.rs", "impl RunRecord for Formed"),
        ("export/lanes.rs", "impl RunRecord for Op"),
    ] {
        let f = files().iter().find(|f| f.rel == file).expect(file);
        assert!(
            f.code.contains(record),
            "{file} keeps no record in hostops::runs"
        );
    }
    let stores: Vec<&str> = files()
        .iter()
        .filter(|f| f.code.contains("CHUNK_MAX"))
        .map(|f| f.rel.as_str())
        .collect();
    assert_eq!(stores, ["hostops/runs.rs"], "a second run store");
}
