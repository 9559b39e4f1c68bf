//! The analyses' own sections of the outputs ([`crate::campaign`]):
//! the campaign as they see it, built once from the batch's result, and
//! each registry entry's section in registry order. This file names no
//! analysis: a new one adds its batch output from its own folder.

use crate::batch::inputs::Kind;
use crate::batch::{BatchResult, Status};
use crate::campaign::safe_name;
use crate::campaign::{Campaign, CampaignTrace, Match, Section};
use std::collections::HashMap;

/// The names of the files batch writes itself (a section may not take
/// one; nor the name of an earlier section's file).
pub const FIXED_FILES: [&str; 3] = ["results.json", "traces.csv", "report.md"];

/// The campaign as the sections see it: worker traces with figures (in
/// path order), Table 8's matches between them (read without error) and
/// the batch's notes.
pub fn campaign(res: &BatchResult) -> Campaign<'_> {
    let mut at: HashMap<usize, usize> = HashMap::new();
    let mut traces = Vec::new();
    for (i, r) in res.records.iter().enumerate() {
        if r.file.kind == Kind::Worker && !r.file.results.is_empty() {
            at.insert(i, traces.len());
            traces.push(CampaignTrace {
                ok: r.file.status == Status::Ok,
                path: &r.file.path,
                results: &r.file.results,
                run: &r.run,
                rank: super::super::rank_key(r),
            });
        }
    }
    let matches = res
        .comparisons
        .iter()
        .filter_map(|c| {
            Some(Match {
                workload: c.workload.clone(),
                candidate_mode: c.candidate_mode.clone(),
                baseline: *at.get(&c.baseline_index)?,
                candidate: *at.get(&c.candidate_index)?,
            })
        })
        .collect();
    Campaign {
        traces,
        matches,
        notes: &res.notes,
    }
}

/// The registry entries' entries of report.md's `Files:` line, in
/// registry order ([`crate::campaign::InBatch::BATCH_LISTED`]).
pub fn listed() -> impl Iterator<Item = &'static str> {
    crate::registry::REGISTRY
        .iter()
        .filter(|e| e.batch_section_fn().is_some())
        .filter_map(|e| e.batch_listed())
}

/// Every file `batch` may write beside `report.md`, from the code: the
/// fixed ones, then each registry entry's section files, in registry
/// order. `figures/` is replaced as a whole.
pub fn all_files() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = FIXED_FILES.to_vec();
    for e in crate::registry::REGISTRY {
        v.extend(e.batch_files().iter().copied());
    }
    v
}

/// Every registry entry's section, in registry order; a section with an
/// unsafe or taken file or figure name loses that file or figure, with a
/// warning.
pub fn sections(res: &BatchResult, warnings: &mut Vec<String>) -> Vec<Section> {
    let c = campaign(res);
    let mut taken: Vec<String> = FIXED_FILES.iter().map(|s| s.to_string()).collect();
    let mut stems: Vec<String> = crate::registry::paper_figures()
        .iter()
        .map(|f| f.stem.to_string())
        .collect();
    let mut out = Vec::new();
    for e in crate::registry::REGISTRY {
        let Some(mut s) = e.batch_section_fn().and_then(|f| f(&c)) else {
            continue;
        };
        s.files.retain(|f| {
            let ok = safe_name(&f.name)
                && !taken.contains(&f.name)
                && e.batch_files().contains(&f.name.as_str());
            if ok {
                taken.push(f.name.clone());
            } else {
                warnings.push(format!(
                    "{}: batch file name {:?} refused (not a plain fixed name, taken, or not among its BATCH_FILES)",
                    e.name, f.name
                ));
            }
            ok
        });
        s.figures.retain(|p| {
            let stem = p.stem().to_string();
            let ok = safe_name(&stem) && !stem.contains('.') && !stems.contains(&stem);
            if ok {
                stems.push(stem);
            } else {
                warnings.push(format!(
                    "{}: figure name {stem:?} refused (not a plain fixed name, or taken)",
                    e.name
                ));
            }
            ok
        });
        out.push(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::records::CampaignOptions;
    use std::path::Path;

    /// The text workload's two traces: the campaign the sections see, and
    /// the sections of the registry in its order.
    #[test]
    fn campaign_matches_groups_and_sections_of_the_text_pair() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
        let paths = [root.join("text_ar"), root.join("text_mtp")];
        let opts = CampaignOptions::default().batch_options(true).unwrap();
        let (res, _) = crate::batch::run_batch(&paths, &opts).unwrap();
        let c = campaign(&res);
        assert_eq!(c.traces.len(), 2);
        assert!(c.traces.iter().all(|t| t.ok && t.rank == Some(0)));
        assert_eq!(
            c.matches,
            vec![Match {
                workload: "text".into(),
                candidate_mode: "mtp".into(),
                baseline: 0,
                candidate: 1,
            }]
        );
        let groups: Vec<(String, String, Vec<usize>)> = c
            .groups()
            .into_iter()
            .map(|g| (g.workload, g.mode, g.traces))
            .collect();
        assert_eq!(
            groups,
            vec![
                ("text".into(), "ar".into(), vec![0]),
                ("text".into(), "mtp".into(), vec![1])
            ]
        );
        let mut warnings = Vec::new();
        let s = sections(&res, &mut warnings);
        assert!(warnings.is_empty(), "{warnings:?}");
        let files: Vec<Vec<&str>> = s
            .iter()
            .map(|s| s.files.iter().map(|f| f.name.as_str()).collect())
            .collect();
        assert_eq!(
            files,
            vec![
                vec!["workloads.csv", "workloads.md"],
                vec!["hierarchy.csv", "hierarchy.md"],
                vec!["gpu_work.csv", "gpu_work.md"],
                vec!["iterations.csv"],
                vec!["diff.csv", "diff_families.csv", "diff_kernels.csv"],
                vec!["ops.csv"],
                vec!["idle_decode.csv", "idle_steps.csv"],
                vec!["critical.csv"],
                // roofline: the pair has no shapes, its section one line.
                vec![],
            ]
        );
        let stems: Vec<&str> = s
            .iter()
            .flat_map(|s| &s.figures)
            .map(|p| p.stem())
            .collect();
        assert_eq!(
            stems,
            [
                "fig7_iterations_per_token",
                "fig7b_graph_cadence",
                "fig8_gpu_time_by_family",
                "fig10_ops_gpu_vs_host_per_token",
                "fig11_idle_per_step",
                "fig14_critical_per_token"
            ]
        );
        assert!(s[4]
            .markdown
            .contains("| text | token | 0.1624 | 0.0745 | -0.0879 |"));
    }
}
