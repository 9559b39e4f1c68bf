//! The campaign's tables (`batch --tables DIR`, issue 36): the same four
//! tables as `export`, every worker trace of the campaign in one file per
//! table, led by three columns that say which run a row comes from —
//! `trace` (the trace's label in traces.csv), `workload` and `mode` (as
//! batch resolved them: run summary, manifest, step names, directory;
//! null where unknown).
//!
//! Read in the same pass as the rest of batch: the batch plan carries the
//! export state ([`CampaignTables::plan`]); each trace's part is written
//! to `DIR/.torchtrace-export-<pid>-<nonce>/` when its read ends, and once batch
//! has resolved workload and mode, [`CampaignTables::write`] copies the
//! parts, in traces.csv's order, into `DIR/<table>.parquet` (each written
//! under a temporary name, renamed when complete).
//!
//! ```text
//! part n (trace, id, device, …)  ─┐  + workload, mode of its record
//! part m (trace, id, device, …)  ─┴─► DIR/activities.parquet (trace, workload, mode, id, device, …)
//! ```

use super::write::{campaign_schema, copy_parts, PartLead};
use super::{prepare, Compression, Export, ExportConfig, ExportError, Table, TableFile, TracePart};
use crate::analysis::{Plan, Results};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// One trace's part with the columns that lead its rows.
#[derive(Debug, Clone)]
pub struct CampaignPart {
    pub trace: String,
    pub workload: Option<String>,
    pub mode: Option<String>,
    pub part: TracePart,
}

/// The campaign's tables of one batch run: where they go, and the
/// temporary folder of the parts (removed when this is dropped).
#[derive(Debug)]
pub struct CampaignTables {
    out: PathBuf,
    config: ExportConfig,
    /// DIR's lock, held until this is dropped (issue 59).
    _lock: super::DirLock,
}

impl CampaignTables {
    /// Creates DIR and the parts' temporary folder in it.
    pub fn new(out: &Path, compression: Compression) -> Result<CampaignTables, ExportError> {
        let (lock, parts) = prepare(out)?;
        Ok(CampaignTables {
            _lock: lock,
            out: out.to_path_buf(),
            config: ExportConfig {
                tables: Table::ALL.to_vec(),
                compression,
                parts,
                next: Arc::new(AtomicU64::new(0)),
            },
        })
    }

    /// `plan` with the export state added: each trace's part is written
    /// when its read ends.
    pub fn plan(&self, plan: &Plan) -> Plan {
        plan.clone().with_analysis::<Export>(self.config.clone())
    }

    /// Takes a trace's part out of its results (so that records and
    /// results.json stay as without `--tables`).
    pub fn take(results: &mut Results) -> Option<TracePart> {
        results.take::<Export>()
    }

    /// Writes `DIR/<table>.parquet` from the parts, in the order given.
    pub fn write(&self, parts: &[CampaignPart]) -> Result<Vec<TableFile>, ExportError> {
        if let Some(e) = parts.iter().find_map(|p| p.part.write_error.clone()) {
            return Err(e.into_error());
        }
        let mut files = Vec::new();
        for &table in &self.config.tables {
            let to = self.out.join(table.file_name());
            let partial = self
                .config
                .parts
                .join(format!("{}.partial", table.file_name()));
            let leads: Vec<PartLead<'_>> = parts
                .iter()
                .flat_map(|p| {
                    p.part
                        .parts
                        .iter()
                        .filter(move |f| f.table == table)
                        .map(move |f| PartLead {
                            file: Path::new(&f.file),
                            lead: vec![
                                Some(p.trace.as_str()),
                                p.workload.as_deref(),
                                p.mode.as_deref(),
                            ],
                        })
                })
                .collect();
            let rows = parts
                .iter()
                .flat_map(|p| &p.part.parts)
                .filter(|f| f.table == table)
                .map(|f| f.rows)
                .sum();
            let written = copy_parts(
                &leads,
                &campaign_schema(table),
                &partial,
                self.config.compression,
            )
            .and_then(|()| std::fs::rename(&partial, &to).map_err(|e| ExportError::io(&to, e)));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&partial);
                return Err(e);
            }
            files.push(TableFile {
                table: table.as_str().to_string(),
                path: to.display().to_string(),
                rows,
            });
        }
        Ok(files)
    }
}

impl Drop for CampaignTables {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.config.parts);
    }
}
