//! What a batch writes, one file per output: `results.json`
//! ([`results_json()`]), `traces.csv` ([`traces_csv`]), `workloads.csv`/`.md`
//! (Table 8, [`workloads`]), `gpu_work.csv`/`.md` ([`gpu_work`]),
//! `hierarchy.csv`/`.md` (Table 9,
//! [`hierarchy`]), `figures/` ([`figures`]) and `report.md`
//! ([`report_md`]) tying them together; plus stdout ([`stdout`]).
//!
//! Only fixed file names are written under OUTDIR (and figure names that
//! the plot module derives from sanitized labels); no input name is ever
//! used as a path.

pub mod figures;
pub mod gpu_work;
pub mod hierarchy;
pub mod report_md;
pub mod results_json;
pub mod stdout;
pub mod traces_csv;
pub mod workloads;

pub use figures::{plot_input, FIGURE_SIZE};
pub use hierarchy::{containment_table, hierarchy_table};
pub use report_md::problems_table;
pub use results_json::{results_json, ResultsDoc};
pub use stdout::{stdout_markdown, write_stdout};
pub use traces_csv::{function_names, traces_table};
pub use workloads::workloads_table;

use super::BatchResult;
use crate::plot::ImageFormat;
use crate::report;
use std::path::{Path, PathBuf};

/// What `write_all` produced besides the fixed files.
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub figures: Vec<PathBuf>,
    pub warnings: Vec<String>,
}

fn write(dir: &Path, name: &str, text: &str, w: &mut Written) -> anyhow::Result<()> {
    let p = dir.join(name);
    std::fs::write(&p, text).map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p.display()))?;
    w.files.push(p);
    Ok(())
}

/// Writes every output file under `dir` (created if needed).
pub fn write_all(
    res: &BatchResult,
    dir: &Path,
    context: &str,
    figures: Option<ImageFormat>,
) -> anyhow::Result<Written> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", dir.display()))?;
    let mut w = Written::default();
    let mut json = serde_json::to_string_pretty(&results_json(res, context))?;
    json.push('\n');
    write(dir, "results.json", &json, &mut w)?;
    write(
        dir,
        "traces.csv",
        &report::csv::to_string(&traces_table(res)),
        &mut w,
    )?;
    write(
        dir,
        "workloads.csv",
        &report::csv::to_string(&workloads_table(res, true)),
        &mut w,
    )?;
    let wl_md = report::markdown::to_string(&workloads_table(res, false));
    write(dir, "workloads.md", &wl_md, &mut w)?;
    write(
        dir,
        "gpu_work.csv",
        &report::csv::to_string(&gpu_work::gpu_work_table(res, true)),
        &mut w,
    )?;
    let gw_md = format!(
        "{}\n{}",
        report::markdown::to_string(&gpu_work::gpu_work_table(res, false)),
        report::markdown::to_string(&gpu_work::timeline_table(res))
    );
    write(dir, "gpu_work.md", &gw_md, &mut w)?;
    write(
        dir,
        "hierarchy.csv",
        &report::csv::to_string(&hierarchy_table(res, true)),
        &mut w,
    )?;
    let h_md = format!(
        "{}\n{}",
        report::markdown::to_string(&hierarchy_table(res, false)),
        report::markdown::to_string(&containment_table(res))
    );
    write(dir, "hierarchy.md", &h_md, &mut w)?;
    if let Some(fmt) = figures {
        let fig_dir = dir.join("figures");
        match figures::render_figures(res, &fig_dir, fmt) {
            Ok(f) => w.figures = f,
            Err(e) => w.warnings.push(format!("figures: {e:#}")),
        }
    }
    let report = report_md::report_md(res, context, &w, dir);
    write(dir, "report.md", &report, &mut w)?;
    Ok(w)
}
