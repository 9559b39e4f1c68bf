//! The structure rules of docs/ARCHITECTURE.md ("What may import what"),
//! checked on the source text so a change that breaks one fails here:
//! no source file over 1000 lines before its tests, the stores below the
//! ledger and the step index, the engine below everything that names an
//! analysis, shared families in their neutral module, hierarchy's chains
//! in hierarchy.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir` (or `dir` itself, a file), sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    if dir.is_file() {
        return vec![dir.to_path_buf()];
    }
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
    out.sort();
    out
}

/// The registry's analyses, in its order.
const ANALYSES: [&str; 8] = [
    "pair",
    "hierarchy",
    "kernels",
    "iterations",
    "diff",
    "ranks",
    "ops",
    "idle",
];

/// A source file's path under src/, with `/` separators.
fn relative(f: &Path) -> String {
    f.strip_prefix(src(""))
        .expect("under src")
        .to_string_lossy()
        .replace('\\', "/")
}

fn src(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(rel)
}

/// The lines of code outside comments (imports and paths in doc text do
/// not count as naming a module).
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// The files of `dir` whose code names any of `names`, with the line.
fn naming(dir: &str, names: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for f in rust_files(&src(dir)) {
        let text = fs::read_to_string(&f).expect("read a source file");
        for l in code_lines(&text) {
            if names.iter().any(|n| l.contains(n)) {
                found.push(format!("{}: {}", f.display(), l.trim()));
            }
        }
    }
    found
}

#[test]
fn no_source_file_is_over_1000_lines_before_its_tests() {
    let mut long = Vec::new();
    for f in rust_files(&src("")) {
        let text = fs::read_to_string(&f).expect("read a source file");
        let before = text
            .lines()
            .position(|l| l.trim() == "#[cfg(test)]")
            .unwrap_or_else(|| text.lines().count());
        if before > 1000 {
            long.push(format!("{}: {before} lines", f.display()));
        }
    }
    assert!(
        long.is_empty(),
        "over 1000 lines before the tests: {long:#?}"
    );
    // The rule reads real files: the carved ledger is among them.
    assert!(src("ledger/collector.rs").exists() && src("store/pack.rs").exists());
}

#[test]
fn the_stores_name_neither_the_ledger_nor_the_step_index_nor_an_analysis() {
    let bad = naming(
        "store",
        &["crate::ledger", "crate::contexts", "crate::analys"],
    );
    assert!(bad.is_empty(), "src/store/ imports above it: {bad:#?}");
    // And the step index builds on the stores, not on the ledger (no cycle).
    let bad = naming("contexts.rs", &["crate::ledger"]);
    assert!(bad.is_empty(), "contexts imports the ledger: {bad:#?}");
}

#[test]
fn analyses_share_families_and_chains_through_neutral_places() {
    // ranks takes the collective pattern from `families`, not from diff.
    let bad = naming("analyses/ranks", &["analyses::diff", "diff::FAMILIES"]);
    assert!(bad.is_empty(), "ranks reads diff: {bad:#?}");
    // hierarchy owns its chains: it imports nothing of the drawing kit's.
    let bad = naming("analyses/hierarchy", &["crate::plot::DEFAULT"]);
    assert!(bad.is_empty(), "hierarchy reads plot's chains: {bad:#?}");
    let fam = fs::read_to_string(src("families.rs")).expect("read families.rs");
    assert!(fam.contains("pub const FAMILIES"));
}

#[test]
fn the_drawing_kit_names_no_analysis() {
    // src/plot/ is theme, layout, marks and ready charts of plain numbers;
    // src/figures/ is the paper figures' frame (input, groups, order).
    // Every figure is drawn in its analysis's folder: the paper's six
    // reach `plot` and `batch` through their analysis's registry line.
    let above = [
        "crate::analyses",
        "crate::figures",
        "crate::api",
        "crate::batch",
        "crate::cli",
        "crate::registry",
    ];
    let bad = naming("plot", &above);
    assert!(bad.is_empty(), "src/plot/ names a layer above it: {bad:#?}");
    // The frame is below the analyses: it names none of them, nor the
    // registry that lists their figures, nor the layers that draw them.
    let above_frame = [
        "crate::analyses",
        "crate::api",
        "crate::batch",
        "crate::cli",
        "crate::registry",
    ];
    let bad = naming("figures", &above_frame);
    assert!(
        bad.is_empty(),
        "src/figures/ names a layer above it: {bad:#?}"
    );
    // ... and above the engine, the campaign contract and the kit.
    for below in ["analysis", "campaign", "ledger", "plot", "trace"] {
        let bad = naming(below, &["crate::figures"]);
        assert!(bad.is_empty(), "src/{below}/ names the figures: {bad:#?}");
    }
    // Each of the paper's six figures is drawn in its analysis's folder.
    for (a, n) in [("pair", 4), ("hierarchy", 1), ("kernels", 1)] {
        let drawn = rust_files(&src(&format!("analyses/{a}")))
            .iter()
            .map(|f| fs::read_to_string(f).expect("read a source file"))
            .map(|t| t.matches("impl Drawing for ").count())
            .sum::<usize>();
        assert_eq!(drawn, n, "{a} draws {drawn} of the paper's figures");
    }
}

#[test]
fn the_engine_imports_nothing_above_it() {
    // src/analysis/ (Plan, drive, Kind, Results) knows no list of analyses:
    // the registry gives the order of results, the campaign contract lives
    // in src/campaign/, figures above it.
    let above = [
        "crate::api",
        "crate::batch",
        "crate::analyses",
        "crate::cli",
        "crate::plot",
        "crate::registry",
        "crate::campaign",
    ];
    let bad = naming("analysis", &above);
    assert!(bad.is_empty(), "src/analysis/ imports above it: {bad:#?}");
    // The campaign contract is below the analyses, batch and the drawing
    // kit: it names none of them.
    let bad = naming(
        "campaign",
        &[
            "crate::api",
            "crate::batch",
            "crate::analyses",
            "crate::cli",
            "crate::plot",
            "crate::registry",
        ],
    );
    assert!(bad.is_empty(), "src/campaign/ imports above it: {bad:#?}");
    // The registry is where the list of analyses lives.
    let reg = fs::read_to_string(src("registry.rs")).expect("read registry.rs");
    assert!(reg.contains("pub static REGISTRY"));
}

#[test]
fn the_campaign_hooks_are_one_trait_in_each_analysis_batch_file() {
    // api::Command holds the per-trace items only; what an analysis gives
    // a campaign is `campaign::InBatch`, implemented in its batch.rs, and
    // its view.rs does not call its batch.rs.
    let bad = naming("api.rs", &["crate::campaign", "fn batch_", "IN_BATCH"]);
    assert!(
        bad.is_empty(),
        "api::Command holds campaign hooks: {bad:#?}"
    );
    for a in ANALYSES {
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
fn the_cli_is_built_from_the_registry() {
    // The binary's src/cli/ holds the top-level parser and the campaign
    // commands; every analysis's subcommand (flags, help, run) is in its
    // folder's cli.rs and reaches the binary through the registry line.
    let analyses = ANALYSES;
    let named: Vec<String> = analyses
        .iter()
        .flat_map(|a| [format!("torchtrace::{a}"), format!("analyses::{a}")])
        .collect();
    let named: Vec<&str> = named.iter().map(String::as_str).collect();
    let bad = naming("cli", &named);
    assert!(bad.is_empty(), "src/cli/ names an analysis: {bad:#?}");
    for a in analyses {
        assert!(
            !src(&format!("cli/{a}.rs")).exists(),
            "{a}'s subcommand is outside its folder"
        );
        let cli = format!("analyses/{a}/cli.rs");
        let text = fs::read_to_string(src(&cli)).expect("read an analysis's cli.rs");
        assert!(text.contains("impl SubcommandArgs for"), "{cli}: no impl");
        // Shared argument groups come from the kit below the binary.
        let bad = naming(&cli, &["crate::cli::", "torchtrace::cli"]);
        assert!(bad.is_empty(), "{cli} imports the binary: {bad:#?}");
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
    // (C1–C5, O6), so export names no analysis and hostops none above it.
    let bad = naming("export", &["crate::analyses", "torchtrace::ops"]);
    assert!(bad.is_empty(), "src/export/ names an analysis: {bad:#?}");
    let bad = naming(
        "hostops",
        &[
            "crate::analyses",
            "crate::api",
            "crate::batch",
            "crate::export",
        ],
    );
    assert!(bad.is_empty(), "src/hostops/ imports above it: {bad:#?}");
    // Both keep ops' C1–C2 through `HostLinks::keep`.
    let ops = fs::read_to_string(src("analyses/ops/mod.rs")).expect("read ops");
    assert!(ops.contains("links: HostLinks,"));
    assert!(ops.contains("self.links.keep(ev, at)"));
    let export = fs::read_to_string(src("export/mod.rs")).expect("read export");
    assert!(export.contains("links: HostLinks,"));
    assert!(export.contains("self.links.keep(ev, at)"));
}

#[test]
fn graphs_is_a_neutral_module_below_the_analyses() {
    // Issue 57: the capture side and the match live in src/graphs/, on the
    // reader and hostops; `ops` (and any analysis) uses them, never the
    // other way.
    let bad = naming(
        "graphs",
        &[
            "crate::analyses",
            "crate::api",
            "crate::batch",
            "crate::export",
            "crate::registry",
        ],
    );
    assert!(bad.is_empty(), "src/graphs/ imports above it: {bad:#?}");
}

#[test]
fn an_analysis_is_named_outside_its_folder_only_by_the_registry() {
    // Done-criterion of the structure issue: besides the registry, no
    // module names an analysis (the crate root re-exports none: library
    // users write `torchtrace::analyses::<name>`); analyses name each
    // other only where an analysis's view prints another's figures by type.
    let names = ANALYSES;
    let mut bad = Vec::new();
    for f in rust_files(&src("")) {
        let rel = relative(&f);
        let allowed = rel.starts_with("analyses/") || rel == "registry.rs";
        if allowed {
            continue;
        }
        let text = fs::read_to_string(&f).expect("read a source file");
        for l in code_lines(&text) {
            for n in names {
                let hit = l.contains(&format!("analyses::{n}"))
                    || l.contains(&format!("crate::{n}::"))
                    || l.contains(&format!("torchtrace::{n}::"));
                if hit {
                    bad.push(format!("{rel}: {}", l.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "an analysis named outside: {bad:#?}");
}

/// The files outside `src/analyses/<name>/` whose code names analysis
/// `name` (a path through `analyses::`, `crate::<name>::`, or an
/// `analyses::{…}` import list), relative to src/.
fn files_naming(name: &str) -> Vec<String> {
    let own = format!("analyses/{name}/");
    let mut out = Vec::new();
    for f in rust_files(&src("")) {
        let rel = relative(&f);
        if rel.starts_with(&own) {
            continue;
        }
        let text = fs::read_to_string(&f).expect("read a source file");
        let names_it = code_lines(&text).any(|l| {
            let list = l.contains("analyses::{")
                && l.split(['{', '}', ',', ' ']).any(|w| w.trim() == name);
            list || l.contains(&format!("analyses::{name}"))
                || l.contains(&format!("crate::{name}::"))
                || l.trim() == format!("pub mod {name};")
        });
        if names_it {
            out.push(rel);
        }
    }
    out
}

#[test]
fn the_files_an_analysis_touches_are_its_folder_and_one_registry_line() {
    // How to add an analysis (docs/ARCHITECTURE.md): its folder (logic,
    // view, batch hooks, cli, figures), `pub mod` in analyses/mod.rs and
    // its line in the registry. No exception: the paper's three (pair,
    // hierarchy, kernels) draw their figures in their folders too.
    let plug_in = ["analyses/mod.rs", "registry.rs"];
    for n in ANALYSES {
        assert_eq!(files_naming(n), plug_in, "{n} is named outside its folder");
    }
}
