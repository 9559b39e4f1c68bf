use super::common::{box_stats, quantile, Theme};
use super::*;
use crate::analyses::pair::compare;
use crate::plot::mode_color;
use crate::runinfo::Mode;

/// A synthetic trace: `n` step contexts with a GPU span around `gpu_us`,
/// a spike at context 1 and no GPU twin for the last context; paired by
/// `pair` itself.
fn trace(label: &str, mode: &str, workload: &str, n: usize, gpu_us: i64, tokens: u64) -> PlotTrace {
    let name = "execute_context_0(0)_generation_1(1)";
    let mut evs = Vec::new();
    for i in 0..n {
        let wobble = ((i * 37) % 11) as i64 * 4;
        let spike = if i == 1 { 3 * gpu_us } else { 0 };
        let gpu = gpu_us + wobble + spike;
        let start = i as i64 * 1000;
        let id = i + 1;
        evs.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":1,"ts":{start},"dur":{},"args":{{"External id":{id}}}}}"#,
            gpu + 80 + wobble / 2
        ));
        if i + 1 < n {
            evs.push(format!(
                r#"{{"ph":"X","cat":"gpu_user_annotation","name":"{name}","pid":0,"tid":7,"ts":{},"dur":{gpu},"args":{{"External id":{id}}}}}"#,
                start + 20
            ));
        }
    }
    let doc = format!("{{\"traceEvents\": [{}]}}", evs.join(","));
    let plan = crate::analysis::Plan::new(crate::analyses::pair::Selector::Auto)
        .with(crate::analyses::pair::PairSpec::default());
    let mut res = crate::analysis::analyze_reader(
        &format!("{label}.pt.trace.json.gz"),
        doc.as_bytes(),
        &plan,
    );
    assert!(res.contexts.problem.is_none());
    let mut p = res.take::<crate::analyses::pair::Pair>().unwrap();
    assert_eq!(p.pairs as usize, n - 1);
    p.set_tokens(Some(tokens), None);
    let functions = if mode == "mtp" {
        vec![
            FunctionMedian {
                name: "sample_tokens".into(),
                median_ms: Some(0.21),
                calls: 30,
            },
            FunctionMedian {
                name: "proposer.propose".into(),
                median_ms: Some(0.12),
                calls: 29,
            },
        ]
    } else {
        vec![
            FunctionMedian {
                name: "sample_tokens".into(),
                median_ms: Some(0.09),
                calls: 64,
            },
            FunctionMedian {
                name: "proposer.propose".into(),
                median_ms: None,
                calls: 0,
            },
        ]
    };
    PlotTrace {
        label: format!("{workload} {}", mode.to_uppercase()),
        mode: Some(mode.into()),
        workload: Some(workload.into()),
        pairs: p,
        kernels: None,
        functions,
    }
}

fn sample_input() -> PlotInput {
    let traces = vec![
        trace("a", "ar", "text", 40, 350, 42),
        trace("b", "mtp", "text", 18, 310, 42),
        trace("c", "ar", "reasoning", 30, 360, 33),
        trace("d", "mtp", "reasoning", 14, 320, 33),
    ];
    let comparisons = vec![
        (
            "text".to_string(),
            compare(&traces[0].pairs, &traces[1].pairs),
        ),
        (
            "reasoning".to_string(),
            compare(&traces[2].pairs, &traces[3].pairs),
        ),
    ];
    PlotInput {
        traces,
        comparisons,
    }
}

fn png_dims_and_variance(path: &Path) -> ((u32, u32), f64) {
    let dec = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let n = bytes.len() as f64;
    let mean = bytes.iter().map(|&b| f64::from(b)).sum::<f64>() / n;
    let var = bytes
        .iter()
        .map(|&b| (f64::from(b) - mean).powi(2))
        .sum::<f64>()
        / n;
    ((info.width, info.height), var)
}

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

#[test]
fn every_figure_renders_png_at_size_and_not_blank() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_input();
    let files = render_all(&input, dir.path(), ImageFormat::Png, (900, 600)).unwrap();
    assert_eq!(files.len(), Figure::ALL.len());
    for f in &files {
        let (dims, var) = png_dims_and_variance(f);
        assert_eq!(dims, (900, 600), "{}", f.display());
        assert!(var > 100.0, "{} looks blank (variance {var})", f.display());
    }
}

#[test]
fn svg_has_titles_and_axis_labels() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample_input();
    render_all(&input, dir.path(), ImageFormat::Svg, (1000, 700)).unwrap();
    let read = |f: Figure| {
        std::fs::read_to_string(dir.path().join(format!("{}.svg", f.file_stem()))).unwrap()
    };
    for f in Figure::ALL {
        let svg = read(f);
        assert!(svg.contains(r#"width="1000""#), "{svg:.200}");
        assert!(svg.contains(f.title()), "{} lacks its title", f.file_stem());
        assert!(
            svg.contains("AR") && svg.contains("MTP"),
            "{}",
            f.file_stem()
        );
    }
    let s = read(Figure::SpanDistributions);
    assert!(s.contains("span per step context (ms)"));
    assert!(s.contains("trace"));
    let s = read(Figure::GpuSpanTimeline);
    assert!(s.contains("GPU span (ms)") && s.contains("step context index"));
    let s = read(Figure::TokensAndSpanPerToken);
    assert!(s.contains("GPU span per token (ms)") && s.contains("tokens per context"));
    assert!(
        s.contains("S_context = "),
        "S_context is written on figure 3"
    );
    let s = read(Figure::HierarchyMedians);
    assert!(s.contains("median inclusive (ms)") && s.contains("proposer.propose"));
    assert!(s.contains("not called"));
    let s = read(Figure::CpuVsGpuSpan);
    assert!(s.contains("CPU span: user_annotation duration (ms)") && s.contains("GPU span (ms)"));
    // No kernels figures in this input: figure 6 says why instead.
    let s = read(Figure::GpuBusyPerToken);
    assert!(s.contains("no GPU work per token"), "{s}");
}

#[test]
fn drawing_twice_gives_identical_bytes() {
    let input = sample_input();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let fa = render_all(&input, a.path(), ImageFormat::Both, (800, 500)).unwrap();
    let fb = render_all(&input, b.path(), ImageFormat::Both, (800, 500)).unwrap();
    assert_eq!(fa.len(), 2 * Figure::ALL.len());
    for (x, y) in fa.iter().zip(&fb) {
        assert_eq!(x.file_name(), y.file_name());
        assert_eq!(
            std::fs::read(x).unwrap(),
            std::fs::read(y).unwrap(),
            "{}",
            x.display()
        );
    }
}

#[test]
fn empty_hierarchy_and_tokens_render_clear_empty_states() {
    let mut input = sample_input();
    for t in &mut input.traces {
        t.functions.clear();
        t.pairs.set_tokens(None, None);
    }
    let dir = tempfile::tempdir().unwrap();
    render_all(&input, dir.path(), ImageFormat::Both, (800, 500)).unwrap();
    let svg = std::fs::read_to_string(dir.path().join("fig4_hierarchy_medians.svg")).unwrap();
    assert!(svg.contains("no hierarchy data"));
    let svg =
        std::fs::read_to_string(dir.path().join("fig3_tokens_and_span_per_token.svg")).unwrap();
    assert!(svg.contains("no completion-token counts"));
    let (_, var) = png_dims_and_variance(&dir.path().join("fig4_hierarchy_medians.png"));
    assert!(var > 10.0);
}

#[test]
fn single_trace_and_no_traces_render() {
    let one = PlotInput {
        traces: vec![trace("solo", "ar", "text", 12, 400, 12)],
        comparisons: Vec::new(),
    };
    let dir = tempfile::tempdir().unwrap();
    render_all(&one, dir.path(), ImageFormat::Png, (640, 400)).unwrap();
    let none = PlotInput::default();
    render_all(&none, dir.path(), ImageFormat::Svg, (640, 400)).unwrap();
    let svg = std::fs::read_to_string(dir.path().join("fig1_span_distributions.svg")).unwrap();
    assert!(svg.contains("no paired step contexts"));
    assert!(matches!(
        render_all(&one, dir.path(), ImageFormat::Png, (10, 10)),
        Err(PlotError::Size(10, 10))
    ));
}
