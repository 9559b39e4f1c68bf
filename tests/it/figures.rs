//! The paper's six figures as `plot` draws them: from results read by the
//! registry's plot plan (each figure drawn in its analysis's folder and
//! listed by its registry line), over synthetic traces whose figures are
//! known: PNG at the size asked and not blank, SVG with titles and axis
//! labels, the same bytes twice, and clear empty states.

use crate::common;

use torchtrace::analysis::{analyze_reader, TraceResult};
use torchtrace::figures::{render_all, Measured, Pairing, PaperFigure, PlotError, PlotInput};
use torchtrace::runinfo::{RunInfo, Source, Sourced};
use torchtrace::trace::ReadOptions;
use torchtrace::{registry, ImageFormat, Selector};

const STEP: &str = "execute_context_0(0)_generation_1(1)";

/// A trace of `n` step contexts with a GPU span around `gpu_us`, a spike
/// at context 1 and no GPU twin for the last context; in each context one
/// kernel launch whose kernel fills the GPU span, and one `sample_tokens`
/// call of `sample_us`, holding a `proposer.propose` call when `propose`.
fn doc(n: usize, gpu_us: i64, sample_us: i64, propose: bool) -> String {
    let mut evs = Vec::new();
    for i in 0..n {
        let wobble = ((i * 37) % 11) as i64 * 4;
        let spike = if i == 1 { 3 * gpu_us } else { 0 };
        let gpu = gpu_us + wobble + spike;
        let start = i as i64 * 10_000;
        let id = i + 1;
        evs.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"{STEP}","pid":1,"tid":1,"ts":{start},"dur":{},"args":{{"External id":{id}}}}}"#,
            gpu + 80 + wobble / 2 + sample_us
        ));
        if i + 1 < n {
            evs.push(format!(
                r#"{{"ph":"X","cat":"gpu_user_annotation","name":"{STEP}","pid":0,"tid":7,"ts":{},"dur":{gpu},"args":{{"External id":{id}}}}}"#,
                start + 20
            ));
        }
        evs.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{id}}}}}"#,
            start + 10
        ));
        evs.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{},"dur":{gpu},"args":{{"correlation":{id}}}}}"#,
            start + 20
        ));
        let s = start + 40;
        evs.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"sample_tokens","pid":1,"tid":1,"ts":{s},"dur":{sample_us}}}"#
        ));
        if propose {
            evs.push(format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"proposer.propose","pid":1,"tid":1,"ts":{},"dur":{}}}"#,
                s + 5,
                sample_us / 2
            ));
        }
    }
    format!("{{\"traceEvents\": [{}]}}", evs.join(","))
}

const CHAIN: &str = "sample_tokens>proposer.propose";

/// `plot`'s one pass over a synthetic trace, tokens set.
fn read(label: &str, n: usize, gpu_us: i64, mtp: bool, tokens: Option<u64>) -> TraceResult {
    let plan = registry::plot_plan(Selector::Auto, ReadOptions::default(), &[CHAIN.into()])
        .expect("the chain is valid");
    let sample_us = if mtp { 210 } else { 90 };
    let text = doc(n, gpu_us, sample_us, mtp);
    let path = format!("{label}.pt.trace.json.gz");
    let mut res = analyze_reader(&path, text.as_bytes(), &plan);
    assert!(res.contexts.problem.is_none());
    res.results.set_tokens(tokens, None);
    res
}

fn sourced(value: &str) -> Option<Sourced<String>> {
    Some(Sourced {
        value: value.into(),
        source: Source::Flag("--mode"),
    })
}

/// Four traces: AR and MTP of two workloads.
fn sample() -> Vec<(TraceResult, RunInfo)> {
    let spec = [
        ("a", "ar", "text", 40, 350, 42),
        ("b", "mtp", "text", 18, 310, 42),
        ("c", "ar", "reasoning", 30, 360, 33),
        ("d", "mtp", "reasoning", 14, 320, 33),
    ];
    spec.iter()
        .map(|&(label, mode, workload, n, gpu_us, tokens)| {
            let res = read(label, n, gpu_us, mode == "mtp", Some(tokens));
            let run = RunInfo {
                mode: sourced(mode),
                workload: sourced(workload),
                ..RunInfo::default()
            };
            (res, run)
        })
        .collect()
}

fn input(traces: &[(TraceResult, RunInfo)]) -> PlotInput<'_> {
    let measured = traces
        .iter()
        .map(|(res, run)| Measured {
            path: res.path.clone(),
            results: &res.results,
            run: run.clone(),
        })
        .collect();
    PlotInput::build(measured, Pairing::Infer)
}

fn figures() -> Vec<&'static PaperFigure> {
    registry::paper_figures()
}

#[test]
fn the_registry_lists_the_six_figures_in_order() {
    let stems: Vec<&str> = figures().iter().map(|f| f.stem).collect();
    assert_eq!(
        stems,
        [
            "fig1_span_distributions",
            "fig2_gpu_span_timeline",
            "fig3_tokens_and_span_per_token",
            "fig4_hierarchy_medians",
            "fig5_cpu_vs_gpu_span",
            "fig6_gpu_busy_per_token",
        ]
    );
    let numbers: Vec<u32> = figures().iter().map(|f| f.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn grouped_traces_compare_ar_with_mtp_per_workload() {
    let traces = sample();
    let input = input(&traces);
    let labels: Vec<&str> = input.traces.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(
        labels,
        ["text AR", "text MTP", "reasoning AR", "reasoning MTP"]
    );
    let c: Vec<(&str, usize, usize)> = input
        .comparisons
        .iter()
        .map(|c| (c.name.as_str(), c.baseline, c.candidate))
        .collect();
    assert_eq!(c, [("text", 0, 1), ("reasoning", 2, 3)]);
}

#[test]
fn every_figure_renders_png_at_size_and_not_blank() {
    let dir = tempfile::tempdir().unwrap();
    let traces = sample();
    let input = input(&traces);
    let files = render_all(&input, &figures(), dir.path(), ImageFormat::Png, (900, 600)).unwrap();
    assert_eq!(files.len(), 6);
    for f in &files {
        let (w, h, var) = common::png_info(f);
        assert_eq!((w, h), (900, 600), "{}", f.display());
        assert!(var > 100.0, "{} looks blank (variance {var})", f.display());
    }
}

#[test]
fn svg_has_titles_and_axis_labels() {
    let dir = tempfile::tempdir().unwrap();
    let traces = sample();
    let input = input(&traces);
    render_all(
        &input,
        &figures(),
        dir.path(),
        ImageFormat::Svg,
        (1000, 700),
    )
    .unwrap();
    let read =
        |stem: &str| std::fs::read_to_string(dir.path().join(format!("{stem}.svg"))).unwrap();
    for f in figures() {
        let svg = read(f.stem);
        assert!(svg.contains(r#"width="1000""#), "{svg:.200}");
        assert!(svg.contains(f.title), "{} lacks its title", f.stem);
        assert!(svg.contains("AR") && svg.contains("MTP"), "{}", f.stem);
    }
    let s = read("fig1_span_distributions");
    assert!(s.contains("span per step context (ms)"));
    assert!(s.contains("trace"));
    let s = read("fig2_gpu_span_timeline");
    assert!(s.contains("GPU span (ms)") && s.contains("step context index"));
    let s = read("fig3_tokens_and_span_per_token");
    assert!(s.contains("GPU span per token (ms)") && s.contains("tokens per context"));
    assert!(
        s.contains("S_context = "),
        "S_context is written on figure 3"
    );
    // Figure 4 from `hierarchy`'s medians: MTP's 0.21 ms sample_tokens over
    // 18 and 14 contexts, AR's 0.09 ms; AR never calls proposer.propose.
    let s = read("fig4_hierarchy_medians");
    assert!(s.contains("median inclusive (ms)") && s.contains("proposer.propose"));
    assert!(s.contains("not called"));
    assert!(s.contains("0.210 (18)") && s.contains("0.090 (40)"), "{s}");
    let s = read("fig5_cpu_vs_gpu_span");
    assert!(s.contains("CPU span: user_annotation duration (ms)") && s.contains("GPU span (ms)"));
    // Figure 6 from `kernels`: one kernel per context, 40 over 42 tokens
    // (AR) and 18 over 42 (MTP).
    let s = read("fig6_gpu_busy_per_token");
    assert!(s.contains("1.0 kernels/token") && s.contains("0.4 kernels/token"));
    assert!(s.contains("S_context (busy) = "), "{s}");
}

#[test]
fn drawing_twice_gives_identical_bytes() {
    let traces = sample();
    let input = input(&traces);
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let fa = render_all(&input, &figures(), a.path(), ImageFormat::Both, (800, 500)).unwrap();
    let fb = render_all(&input, &figures(), b.path(), ImageFormat::Both, (800, 500)).unwrap();
    assert_eq!(fa.len(), 12);
    for (x, y) in fa.iter().zip(&fb) {
        assert_eq!(x.file_name(), y.file_name());
        let (x, y) = (std::fs::read(x).unwrap(), std::fs::read(y).unwrap());
        assert!(x == y, "{}", fa[0].display());
    }
}

#[test]
fn empty_hierarchy_and_tokens_render_clear_empty_states() {
    // No chain call in any trace and no tokens.
    let plan = registry::plot_plan(Selector::Auto, ReadOptions::default(), &["x>y".into()])
        .expect("the chain is valid");
    let traces: Vec<(TraceResult, RunInfo)> = [("a", "ar"), ("b", "mtp")]
        .iter()
        .map(|&(label, mode)| {
            let text = doc(12, 300, 90, false);
            let res = analyze_reader(&format!("{label}.json"), text.as_bytes(), &plan);
            let run = RunInfo {
                mode: sourced(mode),
                workload: sourced("text"),
                ..RunInfo::default()
            };
            (res, run)
        })
        .collect();
    let input = input(&traces);
    assert_eq!(
        registry::input_notes(&input),
        ["no hierarchy data: figure 4 shows an empty state"]
    );
    let dir = tempfile::tempdir().unwrap();
    render_all(
        &input,
        &figures(),
        dir.path(),
        ImageFormat::Both,
        (800, 500),
    )
    .unwrap();
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    assert!(read("fig4_hierarchy_medians.svg").contains("no hierarchy data"));
    assert!(read("fig3_tokens_and_span_per_token.svg").contains("no completion-token counts"));
    assert!(read("fig6_gpu_busy_per_token.svg").contains("no GPU work per token"));
    let (_, _, var) = common::png_info(&dir.path().join("fig4_hierarchy_medians.png"));
    assert!(var > 10.0);
}

#[test]
fn single_trace_and_no_traces_render() {
    let solo = [(read("solo", 12, 400, false, Some(12)), RunInfo::default())];
    let one = input(&solo);
    let dir = tempfile::tempdir().unwrap();
    render_all(&one, &figures(), dir.path(), ImageFormat::Png, (640, 400)).unwrap();
    let none = PlotInput::default();
    render_all(&none, &figures(), dir.path(), ImageFormat::Svg, (640, 400)).unwrap();
    let svg = std::fs::read_to_string(dir.path().join("fig1_span_distributions.svg")).unwrap();
    assert!(svg.contains("no paired step contexts"));
    assert!(matches!(
        render_all(&one, &figures(), dir.path(), ImageFormat::Png, (10, 10)),
        Err(PlotError::Size(10, 10))
    ));
}
