//! The rows (O1): one per host op (cat, name) and O1's pseudo-row, made as
//! ops are read; at the end their inclusive totals (O3), host time (O5),
//! `launch_bound` (O8) and O1's order.

use super::exact::{median, sat};
use super::inclusive::WEIGHTS;
use super::{OpRow, HOST_CATEGORIES, NO_OP};
use crate::model::Sym;

/// Row accumulators beside the public row.
#[derive(Debug, Default)]
pub(super) struct Acc {
    pub(super) row: OpRow,
    pub(super) latencies: Vec<i64>,
}

/// The rows by (cat, name), the pseudo-row last created.
#[derive(Debug, Default)]
pub(super) struct RowSet {
    /// Row of (name, cat) at `name * 4 + cat` (`u32::MAX`: none yet): a
    /// direct index, the names being interned.
    ids: Vec<u32>,
    pub(super) rows: Vec<Acc>,
    /// Per row: a RecordFunction scope (not a python frame, O4).
    pub(super) scope: Vec<bool>,
    pseudo: Option<u32>,
}

impl RowSet {
    /// The row of an op's (name, cat), made when new (O1).
    pub(super) fn of_form(&mut self, name: Sym, cat: u8, names: &crate::model::Interner) -> u32 {
        let next = self.rows.len() as u32;
        let k = name.0 as usize * 4 + usize::from(cat & 3);
        if self.ids.len() <= k {
            self.ids.resize(k + 1, u32::MAX);
        }
        if self.ids[k] == u32::MAX {
            self.ids[k] = next;
        }
        let id = self.ids[k];
        if id == next {
            self.rows.push(Acc {
                row: OpRow {
                    cat: Some(HOST_CATEGORIES[cat as usize % 4].to_string()),
                    name: names.resolve(name).to_string(),
                    ..OpRow::default()
                },
                latencies: Vec::new(),
            });
            self.scope.push(cat != 2);
        }
        id
    }

    /// The row of a (cat, name) from elsewhere (a capture trace's op,
    /// issue 57), made when new.
    pub(super) fn of_name(
        &mut self,
        cat: u8,
        name: &str,
        names: &mut crate::model::Interner,
    ) -> u32 {
        let sym = names.intern(name);
        self.of_form(sym, cat, names)
    }

    /// A row's GPU time replayed from a graph (issue 57).
    pub(super) fn add_graph(&mut self, row: u32, dur: i64) {
        let r = &mut self.rows[row as usize].row;
        r.graph_activities += 1;
        r.gpu_graph_ns = r.gpu_graph_ns.saturating_add(dur);
    }

    pub(super) fn pseudo(&mut self) -> u32 {
        if let Some(p) = self.pseudo {
            return p;
        }
        let id = self.rows.len() as u32;
        self.rows.push(Acc {
            row: OpRow {
                cat: None,
                name: NO_OP.to_string(),
                ..OpRow::default()
            },
            latencies: Vec::new(),
        });
        self.scope.push(false);
        self.pseudo = Some(id);
        id
    }
}

/// Inclusive (O3) and sync time (O5), once per name (`sums`, from the
/// sweeps); the rows' totals, host time, `launch_bound` (O8) and latency
/// medians.
pub(super) fn inclusive_totals(sums: &[[i128; WEIGHTS]], rows: &mut RowSet) {
    let zero = [0i128; WEIGHTS];
    let sums = (0..rows.rows.len()).map(|i| sums.get(i).unwrap_or(&zero));
    for (acc, s) in rows.rows.iter_mut().zip(sums) {
        let r = &mut acc.row;
        if r.cat.is_none() {
            // The pseudo-row holds what no op encloses: its self figures.
            r.launches_total = r.launches_self;
            r.activities_total = r.kernels_self + r.memcpys_self + r.memsets_self;
            r.gpu_total_ns = r.gpu_self_ns;
        } else {
            r.launches_total = s[0] as u64;
            r.activities_total = s[1] as u64;
            r.gpu_total_ns = sat(s[2]);
            r.sync_ns = sat(s[3]);
        }
        r.host_ns = r.cpu_total_ns.saturating_sub(r.sync_ns);
        // O8.
        r.launch_bound = (r.activities_total > 0).then_some(r.gpu_total_ns < r.host_ns);
        acc.latencies.sort_unstable();
        r.launch_latency_ns_median = median(&acc.latencies);
    }
}

/// O1's order: gpu_self desc, gpu_total desc, cpu_total desc, cat, name.
pub(crate) fn sort_rows(rows: &mut [OpRow]) {
    rows.sort_by(|a, b| {
        b.gpu_self_ns
            .cmp(&a.gpu_self_ns)
            .then(b.gpu_total_ns.cmp(&a.gpu_total_ns))
            .then(b.cpu_total_ns.cmp(&a.cpu_total_ns))
            .then(
                a.cat
                    .as_deref()
                    .unwrap_or("")
                    .cmp(b.cat.as_deref().unwrap_or("")),
            )
            .then(a.name.cmp(&b.name))
    });
}
