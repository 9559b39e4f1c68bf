//! The view of `ops`' results: the summary figures ([`columns`]: the
//! side-by-side table, the CSV and `batch`'s traces.csv), the op table
//! (the top N rows by `--sort` and one row summing the rest), and with two
//! traces (AR then MTP) the top-level ops side by side, per token when the
//! tokens are known; [`OpsReport`] is the document it prints (`-f json`:
//! every row).

use super::exact::ratio6;
use super::{OpRow, Ops, OpsSpec, SortBy, TraceOps};
use crate::command::{self, ApiError, Command, Document, Said, TraceOutcome};
use crate::contexts::{Contexts, Selector};
use crate::report::{self, Cell, Format, Table};
use crate::views::Column;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Write};

/// The document `ops` prints (`-f json`).
#[derive(Debug, Serialize)]
pub struct OpsReport {
    pub traces: Vec<TraceOps>,
    /// With two traces: the first (AR, baseline) against the second.
    pub comparison: Option<OpsComparison>,
    /// `--by module`: each trace's graph GPU time by module path (issue 57).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modules: Option<Vec<super::modules::ModuleRow>>,
    #[serde(skip)]
    pub spec: OpsSpec,
}

/// Two traces' top-level ops side by side (O4) and both verdicts (O9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpsComparison {
    pub baseline: String,
    pub candidate: String,
    pub baseline_verdict: Option<String>,
    pub candidate_verdict: Option<String>,
    pub baseline_tokens: Option<u64>,
    pub candidate_tokens: Option<u64>,
    /// Every op with top-level GPU time in either trace, by the larger
    /// side's `gpu_top_ns` (desc), then cat and name.
    pub top_level: Vec<TopLevelPair>,
}

/// One top-level op in both traces (`null` where a trace lacks it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLevelPair {
    pub cat: Option<String>,
    pub name: String,
    pub baseline_gpu_top_ns: Option<i64>,
    pub candidate_gpu_top_ns: Option<i64>,
    pub baseline_host_ns: Option<i64>,
    pub candidate_host_ns: Option<i64>,
    /// Per completion token (exact ratio, 6 decimals), when tokens are known.
    pub baseline_gpu_top_per_token_ns: Option<f64>,
    pub candidate_gpu_top_per_token_ns: Option<f64>,
    pub baseline_host_per_token_ns: Option<f64>,
    pub candidate_host_per_token_ns: Option<f64>,
    pub baseline_launch_bound: Option<bool>,
    pub candidate_launch_bound: Option<bool>,
}

fn per_token(v: Option<i64>, tokens: Option<u64>) -> Option<f64> {
    let t = tokens.filter(|&t| t > 0)?;
    ratio6(i128::from(v?), i128::from(t))
}

/// The comparison's key of an op: its (cat, name), except that vLLM step
/// annotations of one kind (decode, prefill, mixed) are one op, since their
/// names carry the batch's shape: AR's decode step
/// `execute_context_0(0)_generation_1(1)` is MTP's `…_generation_1(3)`.
///
/// The key says which it is (`Key::grouped`): a user range named like the
/// group (`vLLM decode steps`) stays a row of its own (issue 59).
fn compare_key(r: &OpRow) -> Key {
    match crate::steps::parse(&r.name) {
        Some(step) if r.cat.as_deref() == Some("user_annotation") => Key {
            cat: r.cat.clone(),
            name: format!("vLLM {} steps", step.kind()),
            grouped: Some(step.kind()),
        },
        _ => Key {
            cat: r.cat.clone(),
            name: r.name.clone(),
            grouped: None,
        },
    }
}

/// The rows of one key in one trace, summed.
#[derive(Debug, Clone, Copy, Default)]
struct Side {
    gpu_top: i64,
    host: i64,
    gpu_total: i64,
    activities: u64,
}

impl Side {
    fn add(&mut self, r: &OpRow) {
        self.gpu_top = self.gpu_top.saturating_add(r.gpu_top_ns);
        self.host = self.host.saturating_add(r.host_ns);
        self.gpu_total = self.gpu_total.saturating_add(r.gpu_total_ns);
        self.activities += r.activities_total;
    }

    /// O8 over the summed rows (one row: that row's `launch_bound`).
    fn launch_bound(&self) -> Option<bool> {
        (self.activities > 0).then_some(self.gpu_total < self.host)
    }
}

/// A row of the comparison: an op's (cat, name), or the step kind a group
/// of step annotations is of (never equal to an op's key, whatever its
/// name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    cat: Option<String>,
    name: String,
    grouped: Option<&'static str>,
}

fn sides(t: &TraceOps) -> BTreeMap<Key, Side> {
    let mut m: BTreeMap<Key, Side> = BTreeMap::new();
    for r in &t.ops {
        m.entry(compare_key(r)).or_default().add(r);
    }
    m
}

/// The side-by-side comparison of two traces' top-level ops: every key
/// with top-level GPU time in either trace (`compare_key`).
pub fn compare(a: &TraceOps, b: &TraceOps) -> OpsComparison {
    let (sa, sb) = (sides(a), sides(b));
    let keys: std::collections::BTreeSet<&Key> = sa
        .iter()
        .chain(sb.iter())
        .filter(|(_, s)| s.gpu_top > 0)
        .map(|(k, _)| k)
        .collect();
    let mut top: Vec<TopLevelPair> = keys
        .into_iter()
        .map(|k| {
            let (x, y) = (sa.get(k), sb.get(k));
            let g = |s: Option<&Side>| s.map(|s| s.gpu_top);
            let h = |s: Option<&Side>| s.map(|s| s.host);
            let lb = |s: Option<&Side>| s.and_then(Side::launch_bound);
            TopLevelPair {
                baseline_gpu_top_per_token_ns: per_token(g(x), a.completion_tokens),
                candidate_gpu_top_per_token_ns: per_token(g(y), b.completion_tokens),
                baseline_host_per_token_ns: per_token(h(x), a.completion_tokens),
                candidate_host_per_token_ns: per_token(h(y), b.completion_tokens),
                baseline_gpu_top_ns: g(x),
                candidate_gpu_top_ns: g(y),
                baseline_host_ns: h(x),
                candidate_host_ns: h(y),
                baseline_launch_bound: lb(x),
                candidate_launch_bound: lb(y),
                cat: k.cat.clone(),
                name: k.name.clone(),
            }
        })
        .collect();
    let larger = |p: &TopLevelPair| {
        p.baseline_gpu_top_ns
            .unwrap_or(0)
            .max(p.candidate_gpu_top_ns.unwrap_or(0))
    };
    top.sort_by_key(|p| std::cmp::Reverse(larger(p)));
    OpsComparison {
        baseline: a.path.clone(),
        candidate: b.path.clone(),
        baseline_verdict: a.summary.verdict.clone(),
        candidate_verdict: b.summary.verdict.clone(),
        baseline_tokens: a.completion_tokens,
        candidate_tokens: b.completion_tokens,
        top_level: top,
    }
}

impl OpsReport {
    pub fn new(traces: Vec<TraceOps>, spec: OpsSpec) -> Self {
        let comparison = (traces.len() == 2).then(|| compare(&traces[0], &traces[1]));
        let modules = (spec.by == super::GroupBy::Module)
            .then(|| traces.iter().flat_map(super::modules::rows).collect());
        OpsReport {
            traces,
            comparison,
            modules,
            spec,
        }
    }

    pub fn write<W: Write>(&self, out: &mut W, format: Format) -> io::Result<()> {
        let labels: Vec<String> = self
            .traces
            .iter()
            .map(|t| crate::views::short(&t.path))
            .collect();
        let tables = human_tables(self, &labels);
        let csv = csv_tables(self);
        report::render(out, format, self, &tables, &csv)
    }
}

command::trace_outcome!(TraceOps);

impl Document for OpsReport {
    fn write_to(&self, out: &mut dyn Write, format: Format, _: bool) -> io::Result<()> {
        let mut out = out;
        self.write(&mut out, format)
    }
    fn json_value(&self, _: bool) -> Result<serde_json::Value, ApiError> {
        command::json_of(self)
    }
    fn outcomes(&self) -> Vec<&dyn TraceOutcome> {
        command::outcomes(&self.traces)
    }
}

/// `torchtrace ops`: one trace, or two (AR then MTP: compared), or more.
impl Command for Ops {
    type Options = OpsSpec;
    type Report = OpsReport;

    fn configure(options: &OpsSpec, _: &Selector) -> Result<OpsSpec, ApiError> {
        if options.top == 0 {
            return Err(ApiError::Arguments("ops: --top must be at least 1".into()));
        }
        Ok(options.clone())
    }

    /// Exit 1 when a trace has no GPU work at all; its bad input as notes.
    fn said(t: &TraceOps, _: &Contexts) -> Said {
        let mut problems = Vec::new();
        let calls = t.summary.runtime_calls;
        if t.complete && t.summary.activities == 0 && calls > 0 {
            // Runtime calls (launches among them) without any device
            // activity: the profiler did not record the GPU side (issue 60:
            // "nothing was launched" on a trace with 260 launch calls).
            problems.push(format!(
                "{}: {calls} CUDA runtime/driver call(s) but no GPU activity recorded (no kernel, memcpy or memset): the profiler kept only the host side (its CUDA activities off, or the trace cut before they were written), so there is no GPU time to measure",
                t.path
            ));
        } else if t.complete && t.summary.activities == 0 {
            problems.push(format!(
                "{}: no GPU work at all (no kernel, memcpy or memset): nothing was launched",
                t.path
            ));
        }
        let notes = command::path_notes(&t.path, &t.notes());
        Said { problems, notes }
    }

    fn report(outputs: Vec<TraceOps>, spec: &OpsSpec) -> OpsReport {
        OpsReport::new(outputs, spec.clone())
    }
}

type Figure = Column<TraceOps>;

fn fig(key: &str, label: &str, cell: impl Fn(&TraceOps) -> Cell + Send + Sync + 'static) -> Figure {
    Column::new(key, label, cell)
}

fn int(v: i64) -> Cell {
    Cell::Int(v)
}

/// A count per completion token (exact, 6 decimals).
pub fn count_per_token(n: u64, t: &TraceOps) -> Option<f64> {
    per_token(Some(n as i64), t.completion_tokens)
}

/// Every per-trace figure, in table order.
pub fn columns() -> Vec<Figure> {
    vec![
        fig("verdict", "verdict (O9)", |t| {
            t.summary.verdict.clone().map_or(Cell::Null, Cell::Text)
        }),
        fig("host_busy_per_gpu", "host busy per GPU ns", |t| {
            Cell::opt_f(t.summary.host_busy_per_gpu, 6)
        }),
        fig(
            "host_wait_share_of_idle",
            "host wait share of GPU idle",
            |t| Cell::opt_f(t.summary.host_wait_share_of_idle, 6),
        ),
        fig("launches_per_token", "launches per token", |t| {
            Cell::opt_f(count_per_token(t.summary.launches, t), 6)
        }),
        fig(
            "short_gpu_launches_per_token",
            "short-GPU launches per token",
            |t| Cell::opt_f(count_per_token(t.summary.launch_stats.short_gpu, t), 6),
        ),
        fig("completion_tokens", "completion tokens", |t| {
            Cell::opt_i(t.completion_tokens)
        }),
        fig("host_ops", "host ops", |t| t.summary.host_ops.into()),
        fig("runtime_calls", "runtime calls", |t| {
            t.summary.runtime_calls.into()
        }),
        fig("launches", "launches", |t| t.summary.launches.into()),
        fig("graph_launches", "graph launches", |t| {
            t.summary.graph_launches.into()
        }),
        fig("activities", "activities", |t| t.summary.activities.into()),
        fig("activities_unlinked", "  unlinked", |t| {
            t.summary.activities_unlinked.into()
        }),
        fig("graph_kernels", "graph kernels", |t| {
            t.summary.graph_kernels.into()
        }),
        fig("gpu_linked_ns", "GPU linked (ns)", |t| {
            Cell::wide(t.summary.gpu_linked_ns)
        }),
        fig("host_window_ns", "host window (ns)", |t| {
            Cell::wide(t.summary.host_window_ns)
        }),
        fig("host_blocked_ns", "host blocked on sync (ns)", |t| {
            Cell::wide(t.summary.host_blocked_ns)
        }),
        fig("host_busy_ns", "host busy (ns)", |t| {
            Cell::wide(t.summary.host_busy_ns)
        }),
        fig("gpu_idle_ns", "GPU idle (ns)", |t| {
            Cell::wide(t.summary.gpu_idle_ns)
        }),
        fig(
            "gpu_host_wait_ns",
            "GPU idle waiting for the host (ns)",
            |t| Cell::wide(t.summary.gpu_host_wait_ns),
        ),
        fig(
            "launch_bound_gpu_share",
            "launch-bound share of top-level GPU",
            |t| Cell::opt_f(t.summary.launch_bound_gpu_share, 6),
        ),
        fig("launch_latency_ns_mean", "launch latency, mean (ns)", |t| {
            t.summary
                .launch_stats
                .launch_latency_ns
                .mean
                .map_or(Cell::Null, Cell::Int)
        }),
        fig("queue_delay_ns_median", "queue delay, median (ns)", |t| {
            t.summary
                .launch_stats
                .queue_delay_ns
                .median
                .map_or(Cell::Null, Cell::Int)
        }),
        fig("short_gpu", "short-GPU launches", |t| {
            t.summary.launch_stats.short_gpu.into()
        }),
        fig("long_launch_delay", "long launch delays", |t| {
            t.summary.launch_stats.long_launch_delay.into()
        }),
    ]
}

/// The rows in `--sort` order (ties: O1's order, which they are in).
pub fn sorted(rows: &[OpRow], by: SortBy) -> Vec<&OpRow> {
    let mut v: Vec<&OpRow> = rows.iter().collect();
    match by {
        SortBy::GpuSelf => {}
        SortBy::GpuTop => v.sort_by_key(|r| std::cmp::Reverse(r.gpu_top_ns)),
        SortBy::Host => v.sort_by_key(|r| std::cmp::Reverse(r.host_ns)),
        SortBy::Calls => v.sort_by_key(|r| std::cmp::Reverse(r.calls)),
        SortBy::CpuSelf => v.sort_by_key(|r| std::cmp::Reverse(r.cpu_self_ns)),
    }
    v
}

const ROW_HEADS: [&str; 13] = [
    "cat",
    "name",
    "calls",
    "cpu_total_ns",
    "cpu_self_ns",
    "host_ns",
    "sync_ns",
    "launches_self",
    "gpu_self_ns",
    "gpu_total_ns",
    "gpu_top_ns",
    "launch_latency_ns_median",
    "launch_bound",
];

fn row_cells(r: &OpRow) -> Vec<Cell> {
    vec![
        r.cat.clone().map_or(Cell::Null, Cell::Text),
        Cell::text(crate::text::ellipsize_middle(&r.name, 60)),
        r.calls.into(),
        int(r.cpu_total_ns),
        int(r.cpu_self_ns),
        int(r.host_ns),
        int(r.sync_ns),
        r.launches_self.into(),
        int(r.gpu_self_ns),
        int(r.gpu_total_ns),
        int(r.gpu_top_ns),
        r.launch_latency_ns_median.map_or(Cell::Null, Cell::Int),
        r.launch_bound
            .map_or(Cell::Null, |b| Cell::text(b.to_string())),
    ]
}

/// The top `n` rows and one row summing the rest (self and top-level
/// figures add up; inclusive ones are not summed: they overlap).
fn ops_table(t: &TraceOps, label: &str, spec: &OpsSpec) -> Table {
    // A trace whose graph replays were attributed shows their GPU time
    // per op (the captured ops' own column, else rows of zeros).
    let graphs = t.graphs.gpu_graph_ns > 0;
    let mut heads = ROW_HEADS.to_vec();
    if graphs {
        heads.push("gpu_graph_ns");
    }
    let mut table = Table::new(
        format!(
            "Ops of {label} (top {} by {})",
            spec.top,
            spec.sort.as_str()
        ),
        &heads,
    );
    let rows = sorted(&t.ops, spec.sort);
    for r in rows.iter().take(spec.top) {
        let mut cells = row_cells(r);
        if graphs {
            cells.push(int(r.gpu_graph_ns));
        }
        table.row(cells);
    }
    let rest = &rows[rows.len().min(spec.top)..];
    if !rest.is_empty() {
        let sum =
            |f: fn(&OpRow) -> i64| int(rest.iter().map(|r| f(r)).fold(0i64, i64::saturating_add));
        table.row(vec![
            Cell::Null,
            Cell::text(format!("({} other ops)", rest.len())),
            rest.iter().map(|r| r.calls).sum::<u64>().into(),
            Cell::Null,
            sum(|r| r.cpu_self_ns),
            Cell::Null,
            Cell::Null,
            rest.iter().map(|r| r.launches_self).sum::<u64>().into(),
            sum(|r| r.gpu_self_ns),
            Cell::Null,
            sum(|r| r.gpu_top_ns),
            Cell::Null,
            Cell::Null,
        ]);
        if graphs {
            if let Some(last) = table.rows.last_mut() {
                last.push(sum(|r| r.gpu_graph_ns));
            }
        }
    }
    if graphs {
        table.notes.push(
            "gpu_graph_ns = GPU time of the graph replays' activities this op launched at capture time (docs/GRAPHS.md; under gpu_self_ns it stays the graph launch's)".into(),
        );
    }
    table.notes.push(
        "self = launched by the op itself (innermost op holding the runtime call, O2); total = anywhere inside the name, once per name (O3); top = outermost cpu_op/user_annotation (O4); host = cpu_total − sync (O5); launch_bound = gpu_total < host (O8)".into(),
    );
    table
}

fn human_tables(r: &OpsReport, labels: &[String]) -> Vec<Table> {
    let mut heads = vec!["figure".to_string()];
    heads.extend(labels.iter().cloned());
    let mut t = Table {
        title: "Ops: CPU operator → GPU work, and is the run launch-bound".into(),
        headers: heads,
        ..Default::default()
    };
    crate::views::transposed(&mut t, &columns(), &r.traces);
    for (x, label) in r.traces.iter().zip(labels) {
        if !x.complete {
            t.notes.push(format!(
                "{label}: INCOMPLETE — {}",
                x.error.as_deref().unwrap_or("")
            ));
        }
    }
    t.notes.push("verdict = launch-bound iff host busy > GPU linked time and host wait > half of GPU idle (O9)".into());
    let mut tables = vec![t];
    for (x, label) in r.traces.iter().zip(labels) {
        tables.push(match r.spec.by {
            super::GroupBy::Op => ops_table(x, label, &r.spec),
            super::GroupBy::Module => super::modules::table(x, label, r.spec.top),
        });
    }
    if let Some(c) = &r.comparison {
        tables.push(comparison_table(c, labels, r.spec.top));
    }
    tables
}

fn comparison_table(c: &OpsComparison, labels: &[String], top: usize) -> Table {
    let mut t = Table::new(
        format!(
            "Top-level ops: {} (AR) vs {} (MTP); verdicts: {} / {}",
            labels[0],
            labels[1],
            c.baseline_verdict.as_deref().unwrap_or("—"),
            c.candidate_verdict.as_deref().unwrap_or("—")
        ),
        &[
            "op",
            "AR GPU top (ns)",
            "MTP GPU top (ns)",
            "AR host (ns)",
            "MTP host (ns)",
            "AR GPU/token (ns)",
            "MTP GPU/token (ns)",
            "AR host/token (ns)",
            "MTP host/token (ns)",
        ],
    );
    let i = |v: Option<i64>| v.map_or(Cell::Null, Cell::Int);
    for p in c.top_level.iter().take(top) {
        t.row(vec![
            Cell::text(crate::text::ellipsize_middle(&p.name, 50)),
            i(p.baseline_gpu_top_ns),
            i(p.candidate_gpu_top_ns),
            i(p.baseline_host_ns),
            i(p.candidate_host_ns),
            Cell::opt_f(p.baseline_gpu_top_per_token_ns, 1),
            Cell::opt_f(p.candidate_gpu_top_per_token_ns, 1),
            Cell::opt_f(p.baseline_host_per_token_ns, 1),
            Cell::opt_f(p.candidate_host_per_token_ns, 1),
        ]);
    }
    if c.baseline_tokens.is_none() || c.candidate_tokens.is_none() {
        t.notes
            .push("completion tokens unknown for a trace (give --tokens or --summary): per-token figures are null".into());
    }
    t
}

fn csv_tables(r: &OpsReport) -> Vec<Table> {
    let figs = columns();
    let mut heads: Vec<&str> = vec!["path"];
    heads.extend(figs.iter().map(|f| f.key.as_str()));
    heads.push("complete");
    let mut t = Table::new("ops", &heads);
    for x in &r.traces {
        let mut row: Vec<Cell> = vec![x.path.clone().into()];
        row.extend(figs.iter().map(|f| f.cell(x)));
        row.push(x.complete.to_string().into());
        t.row(row);
    }
    let mut rows = Table::new(
        "ops_rows",
        &[
            "path",
            "cat",
            "name",
            "calls",
            "cpu_total_ns",
            "cpu_self_ns",
            "sync_ns",
            "host_ns",
            "runtime_self_ns",
            "launches_self",
            "graph_launches_self",
            "kernels_self",
            "memcpys_self",
            "memsets_self",
            "gpu_self_ns",
            "launches_total",
            "activities_total",
            "gpu_total_ns",
            "activities_top",
            "gpu_top_ns",
            "short_gpu_self",
            "long_runtime_self",
            "long_launch_delay_self",
            "launch_latency_ns_sum",
            "launch_latency_ns_median",
            "queue_delay_ns_sum",
            "first_launch_delay_ns_sum",
            "first_launch_delay_n",
            "launch_bound",
        ],
    );
    for x in &r.traces {
        for o in sorted(&x.ops, r.spec.sort) {
            rows.row(vec![
                x.path.clone().into(),
                o.cat.clone().map_or(Cell::Null, Cell::Text),
                o.name.clone().into(),
                o.calls.into(),
                int(o.cpu_total_ns),
                int(o.cpu_self_ns),
                int(o.sync_ns),
                int(o.host_ns),
                int(o.runtime_self_ns),
                o.launches_self.into(),
                o.graph_launches_self.into(),
                o.kernels_self.into(),
                o.memcpys_self.into(),
                o.memsets_self.into(),
                int(o.gpu_self_ns),
                o.launches_total.into(),
                o.activities_total.into(),
                int(o.gpu_total_ns),
                o.activities_top.into(),
                int(o.gpu_top_ns),
                o.short_gpu_self.into(),
                o.long_runtime_self.into(),
                o.long_launch_delay_self.into(),
                int(o.launch_latency_ns_sum),
                o.launch_latency_ns_median.map_or(Cell::Null, Cell::Int),
                int(o.queue_delay_ns_sum),
                int(o.first_launch_delay_ns_sum),
                o.first_launch_delay_n.into(),
                o.launch_bound
                    .map_or(Cell::Null, |b| Cell::text(b.to_string())),
            ]);
        }
    }
    if r.spec.by == super::GroupBy::Module {
        return vec![t, super::modules::csv(&r.traces)];
    }
    vec![t, rows]
}
