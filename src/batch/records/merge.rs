//! Merge: the records of every shard (or task, or campaign) back into one
//! batch result, every unit covered (else failed rows saying why), the same
//! rows in the same order as one process would give.

use super::lines::RecordSet;
use super::{assigned_units, Header, RecordError, Shard};
use crate::batch::run::{self, Plan};
use crate::batch::{BatchOptions, BatchResult, FileResult};
use std::collections::BTreeSet;

/// Merges the records of one or more campaigns into what `batch` finds.
///
/// Records of one campaign (same fingerprint) are its shards: each shard
/// may come once; every unit that no row covers — its shard's records
/// missing or cut short, its task lost — becomes failed rows saying why,
/// so nothing is silently missing. Several campaigns (made with the same
/// options) are combined as if their PATHs had been given together.
pub fn merge(sets: Vec<RecordSet>, quiet: bool) -> Result<(BatchResult, String), RecordError> {
    let first = sets.first().ok_or(RecordError::Empty)?;
    let opts = first.header.options.batch_options(quiet)?;
    merge_with(sets, &opts)
}

/// [`merge`] with the options of the map step.
pub fn merge_with(
    sets: Vec<RecordSet>,
    opts: &BatchOptions,
) -> Result<(BatchResult, String), RecordError> {
    let first = sets.first().ok_or(RecordError::Empty)?;
    let options = first.header.options.clone();
    let context = first.header.context.clone();
    if let Some(other) = sets.iter().find(|s| s.header.options != options) {
        return Err(RecordError::Mismatch(format!(
            "records of campaign {} and {} were made with different options (--context, --chain, --manifest): merge them separately",
            first.header.campaign, other.header.campaign
        )));
    }
    // Campaigns in order of first appearance.
    let mut campaigns: Vec<Vec<RecordSet>> = Vec::new();
    for s in sets {
        match campaigns
            .iter_mut()
            .find(|c| c[0].header.campaign == s.header.campaign)
        {
            Some(c) => c.push(s),
            None => campaigns.push(vec![s]),
        }
    }
    let (mut inputs, mut files, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    let mut campaign_of: Vec<usize> = Vec::new();
    for (c, sets) in campaigns.into_iter().enumerate() {
        let offset = inputs.len();
        let (header, rows) = merge_campaign(sets)?;
        campaign_of.extend(std::iter::repeat_n(c, header.inputs.len()));
        inputs.extend(header.inputs);
        notes.extend(header.notes);
        files.extend(rows.into_iter().map(|mut r| {
            r.input = r.input.saturating_add(offset);
            r
        }));
    }
    notes.extend(shared_traces(&mut files, &campaign_of));
    let mut res = crate::batch::finalize(inputs, files, opts);
    res.notes.extend(notes);
    Ok((res, context))
}

/// Worker traces that the records of several campaigns hold (the same
/// trace given to two campaigns): counted once, as `batch` over all their
/// PATHs would. Two rows are the same trace when they agree on size and on
/// every figure (each context's exact times included), labels aside; the
/// later row becomes `skipped`, "duplicate of FIRST", without figures.
pub(super) fn shared_traces(files: &mut [FileResult], campaign_of: &[usize]) -> Option<String> {
    if campaign_of.last().is_none_or(|&c| c == 0) {
        return None;
    }
    let campaign = |f: &FileResult| campaign_of.get(f.input).copied();
    let mut first: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut dups = 0usize;
    for k in 0..files.len() {
        let f = &files[k];
        if f.kind != crate::batch::Kind::Worker || f.status != crate::batch::Status::Ok {
            continue;
        }
        let Some(key) = trace_fingerprint(f) else {
            continue;
        };
        match first.get(&key) {
            Some(&j) if campaign(&files[j]) != campaign(&files[k]) => {
                let why = format!(
                    "duplicate of {} (in the records of another campaign)",
                    files[j].path
                );
                let f = &mut files[k];
                f.status = crate::batch::Status::Skipped;
                f.error = Some(why);
                f.results = Default::default();
                dups += 1;
            }
            Some(_) => {}
            None => {
                first.insert(key, k);
            }
        }
    }
    (dups > 0).then(|| {
        format!(
            "{dups} worker trace(s) are in the records of more than one campaign (same size and figures): counted once, listed as skipped, \"duplicate of …\""
        )
    })
}

/// What identifies a trace's content in a record: its size and figures,
/// labels blanked.
pub(super) fn trace_fingerprint(f: &FileResult) -> Option<String> {
    if f.results.is_empty() {
        return None;
    }
    let mut v = crate::record::with_internals(|| serde_json::to_value(&f.results).ok())?;
    for (_, figures) in v.as_object_mut()?.iter_mut() {
        if let Some(obj) = figures.as_object_mut() {
            obj.remove("path");
        }
    }
    serde_json::to_string(&(f.size, &v)).ok()
}

/// Every row must be one the campaign's plans can give: of an input it
/// has, of a file or member its plan lists (a tar's members are not
/// listed: their names must be safe), once; and a worker trace read
/// without error carries its figures.
pub(super) fn check_rows(header: &Header, files: &[FileResult]) -> Result<(), RecordError> {
    let bad = |f: &FileResult, what: String| {
        RecordError::Mismatch(format!(
            "campaign {}: the record of {:?} {what}: records edited, or of another campaign? (nothing was written)",
            header.campaign,
            crate::trace::message::clip_str(&f.path)
        ))
    };
    let mut labels: Vec<Option<std::collections::HashSet<String>>> =
        vec![None; header.inputs.len()];
    let mut seen: std::collections::HashSet<(usize, &str, u64)> = std::collections::HashSet::new();
    for f in files {
        let (Some(input), Some(plan)) = (header.inputs.get(f.input), header.plans.get(f.input))
        else {
            return Err(bad(
                f,
                format!(
                    "names input {} of a campaign of {} input(s)",
                    f.input,
                    header.inputs.len()
                ),
            ));
        };
        if !seen.insert((f.input, f.path.as_str(), f.ordinal)) {
            return Err(bad(f, "is given twice".into()));
        }
        let whole = f.path == input.path;
        let known = match plan {
            Plan::Directory(dir, issues) => labels[f.input]
                .get_or_insert_with(|| {
                    dir.iter()
                        .map(|d| input.label(&d.rel))
                        .chain(issues.iter().map(|i| input.label(&i.rel)))
                        .collect()
                })
                .contains(&f.path),
            Plan::Zip(members) => {
                whole
                    || members.iter().any(|m| {
                        m.index as u64 == f.ordinal
                            && (f.status != crate::batch::Status::Ok
                                || crate::batch::inputs::normalize_member(&m.name)
                                    .is_ok_and(|rel| input.label(&rel) == f.path))
                    })
            }
            Plan::Tar { .. } => {
                whole
                    || f.status != crate::batch::Status::Ok
                    || f.path
                        .strip_prefix(input.prefix.as_str())
                        .is_some_and(|rel| {
                            crate::batch::inputs::normalize_member(rel).is_ok_and(|n| n == rel)
                        })
            }
            Plan::File { .. } | Plan::Broken(_) => whole,
            Plan::Elsewhere => false,
        };
        if !known {
            return Err(bad(
                f,
                format!(
                    "is of a file that input {} ({}) does not hold",
                    f.input,
                    crate::trace::message::clip_str(&input.path)
                ),
            ));
        }
        if f.kind == crate::batch::Kind::Worker && f.status == crate::batch::Status::Ok {
            // Every analysis of a batch's plan gives figures for a trace
            // read without error.
            let missing = crate::registry::REGISTRY
                .iter()
                .filter(|e| e.add_to_fn().is_some())
                .find(|e| !f.results.contains_key(e.key));
            if let Some(e) = missing {
                return Err(bad(
                    f,
                    format!(
                        "says the trace was read without error but holds no figures (of {}; records made by a torchtrace without that analysis in batch must be made again)",
                        e.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The shards of one campaign: their rows, and failed rows for every
/// unit none of them covers.
pub(super) fn merge_campaign(
    sets: Vec<RecordSet>,
) -> Result<(Header, Vec<FileResult>), RecordError> {
    let header = sets[0].header.clone();
    let count = header.shard.count;
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut cut_short: BTreeSet<usize> = BTreeSet::new();
    let mut files = Vec::new();
    for s in sets {
        if s.header.shard.count != count {
            return Err(RecordError::Mismatch(format!(
                "campaign {}: shards of {} and of {} given: use the records of one split",
                header.campaign, count, s.header.shard.count
            )));
        }
        if !seen.insert(s.header.shard.index) {
            return Err(RecordError::Mismatch(format!(
                "campaign {}: shard {} given twice",
                header.campaign, s.header.shard
            )));
        }
        if !s.complete {
            cut_short.insert(s.header.shard.index);
        }
        files.extend(s.files);
    }
    check_rows(&header, &files)?;
    let mut by_input: Vec<run::RowsOf> = std::iter::repeat_with(Default::default)
        .take(header.inputs.len())
        .collect();
    for f in &files {
        if let Some(v) = by_input.get_mut(f.input) {
            v.add(f);
        }
    }
    let mut missing = Vec::new();
    for (i, unit, shard) in assigned_units(&header, count) {
        let input = &header.inputs[i];
        if unit.plan.covered_by(input, &by_input[i]) {
            continue;
        }
        let on = Shard {
            index: shard,
            count,
        };
        let why = if !seen.contains(&shard) {
            format!("not analysed: the records of shard {on} were not given")
        } else if cut_short.contains(&shard) {
            format!("not analysed: the records of shard {on} end early (the shard did not finish)")
        } else {
            format!("not analysed: no record in shard {on}")
        };
        missing.extend(unit.plan.failed_rows(i, input, &why));
    }
    files.extend(missing);
    Ok((header, files))
}
