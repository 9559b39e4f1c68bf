//! The frame's own tests; every figure is drawn from real results in
//! tests/it/figures.rs (they read the analyses' figures, which this module
//! does not name).

use super::common::{box_stats, quantile, Theme};
use super::*;
use crate::plot::mode_color;
use crate::runinfo::{Mode, RunInfo};

#[test]
fn modes_are_classified_and_coloured_consistently() {
    assert_eq!(Mode::of_opt(Some("ar")), Mode::Ar);
    assert_eq!(Mode::of_opt(Some("AR")), Mode::Ar);
    assert_eq!(Mode::of_opt(Some("baseline")), Mode::Ar);
    assert_eq!(Mode::of_opt(Some("mtp")), Mode::Mtp);
    assert_eq!(Mode::of_opt(Some("eagle3")), Mode::Mtp);
    assert_eq!(Mode::of_opt(Some("candidate")), Mode::Mtp);
    assert_eq!(Mode::of_opt(Some("ngram-x")), Mode::Other);
    assert_eq!(Mode::of_opt(None), Mode::Other);
    assert_eq!(mode_color(Some("ar")), common::AR_BLUE);
    assert_eq!(mode_color(Some("mtp")), common::MTP_ORANGE);
    assert_eq!(mode_color(None), common::OTHER_GREY);
}

#[test]
fn quantiles_match_pair_medians() {
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.5));
    assert_eq!(quantile(&[], 0.5), None);
    let (q1, med, q3, lo, hi) = box_stats(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
    assert_eq!((q1, med, q3), (2.0, 3.0, 4.0));
    // 100 is beyond Q3 + 1.5 IQR: the whisker stops at 4.
    assert_eq!((lo, hi), (1.0, 4.0));
    assert!(Theme::new((640, 400)).s < Theme::new((2560, 1600)).s);
}

fn measured<'a>(path: &str, results: &'a Results, mode: Option<&str>) -> Measured<'a> {
    let run = RunInfo {
        mode: mode.map(|m| crate::runinfo::Sourced {
            value: m.to_string(),
            source: crate::runinfo::Source::Flag("--mode"),
        }),
        ..RunInfo::default()
    };
    Measured {
        path: path.to_string(),
        results,
        run,
    }
}

#[test]
fn consecutive_traces_pair_up_by_index_and_group_by_comparison() {
    // Without modes and workloads, traces pair up as they come; the same
    // file given twice is two traces, each in its own comparison's group.
    let r = Results::default();
    let ms = ["a.json", "b.json", "a.json", "c.json", "d.json"]
        .map(|p| measured(p, &r, None))
        .to_vec();
    let input = PlotInput::build(ms, Pairing::Infer);
    let pairs: Vec<(usize, usize)> = input
        .comparisons
        .iter()
        .map(|c| (c.baseline, c.candidate))
        .collect();
    assert_eq!(pairs, [(0, 1), (2, 3)]);
    assert_eq!(input.comparisons[1].name, "pair 2");
    let modes: Vec<Option<&str>> = input.traces.iter().map(|t| t.mode.as_deref()).collect();
    let (b, c) = (Some("baseline"), Some("candidate"));
    assert_eq!(modes, [b, c, b, c, None]);
    let p = Prepared::new(&input, (800, 500));
    let groups: Vec<(&str, &[usize])> = p
        .groups
        .iter()
        .map(|g| (g.name.as_str(), &g.members[..]))
        .collect();
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[0], ("pair 1", &[0, 1][..]));
    assert_eq!(groups[1], ("pair 2", &[2, 3][..]));
    assert_eq!(groups[2].1, &[4][..]);
    assert_eq!(p.groups[1].comparison, Some(&input.comparisons[1]));
    assert!(p.groups[2].comparison.is_none());
}

#[test]
fn grouped_traces_compare_the_first_ar_with_the_first_other() {
    let r = Results::default();
    let mut ms: Vec<Measured> = [("m", "mtp"), ("a", "ar"), ("e", "eagle")]
        .iter()
        .map(|(p, mode)| measured(p, &r, Some(mode)))
        .collect();
    for m in &mut ms {
        m.run.workload = Some(crate::runinfo::Sourced {
            value: "text".into(),
            source: crate::runinfo::Source::Flag("--mode"),
        });
    }
    let input = PlotInput::build(ms, Pairing::Infer);
    let c = &input.comparisons;
    assert_eq!((c.len(), c[0].baseline, c[0].candidate), (1, 1, 0));
    let p = Prepared::new(&input, (800, 500));
    // One group, AR first.
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].members, [1, 0, 2]);
}
