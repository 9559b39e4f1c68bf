//! The Parquet files: each table's Arrow schema, a trace's rows written in
//! record batches of [`BATCH_ROWS`] (row groups of at most
//! [`ROW_GROUP_ROWS`]), and the final files from the parts.
//!
//! Names (`name`, `cat`, `kind`, `trace`, …) are Arrow dictionary columns
//! (`dictionary<int32, utf8>`), written with Parquet's dictionary encoding;
//! times are int64 ns, exact; ids are the row's position in its table
//! (file order), per trace.

use super::lanes::{LaneOps, Op};
use super::link::Depths;
use super::report::{TableFile, TracePart, WriteFailure};
use super::{Compression, Configs, ExportError, Table, Texts};
use crate::allocator::{absolute, device_label, levels, AllocEvent, AllocEvents};
use crate::hostops::launch::{end_of, Launch};
use crate::hostops::Linked;
use crate::model::{Interner, LaneTable, Sym, ThreadPart};
use crate::store::pack::Records;
use crate::windows::StepWindow;
use arrow_array::builder::StringDictionaryBuilder;
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows per record batch handed to the writer.
pub const BATCH_ROWS: usize = 16 * 1024;

/// The most rows of a row group (the writer holds one row group encoded).
pub const ROW_GROUP_ROWS: usize = 128 * 1024;

fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// Column kinds of the schemas.
#[derive(Clone, Copy)]
enum C {
    /// int64, never null.
    I,
    /// int64, null where unknown.
    N,
    /// dictionary string, never null.
    D,
    /// dictionary string, null where unknown.
    Dn,
    /// int32.
    I32,
    /// boolean.
    B,
}

fn schema_of(cols: &[(&str, C)]) -> SchemaRef {
    let fields: Vec<Field> = cols
        .iter()
        .map(|&(name, c)| match c {
            C::I => Field::new(name, DataType::Int64, false),
            C::N => Field::new(name, DataType::Int64, true),
            C::D => Field::new(name, dict_type(), false),
            C::Dn => Field::new(name, dict_type(), true),
            C::I32 => Field::new(name, DataType::Int32, false),
            C::B => Field::new(name, DataType::Boolean, false),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// The columns of each table, in order (docs/COMMANDS.md, "torchtrace
/// export", defines each): the constants below.
pub fn schema(table: Table) -> SchemaRef {
    schema_of(match table {
        Table::Activities => ACTIVITIES,
        Table::Launches => LAUNCHES,
        Table::Ops => OPS,
        Table::Steps => STEPS,
        Table::Memory => MEMORY,
    })
}

const ACTIVITIES: &[(&str, C)] = &[
    ("trace", C::D),
    ("id", C::I),
    ("device", C::N),
    ("stream", C::N),
    ("kind", C::D),
    ("name", C::D),
    ("start_ns", C::I),
    ("end_ns", C::I),
    ("dur_ns", C::I),
    ("correlation", C::N),
    ("launch_id", C::N),
    ("launch_name", C::Dn),
    ("graph_replay", C::N),
    ("launcher_op_id", C::N),
    ("top_op_id", C::N),
    ("step", C::N),
    ("grid_x", C::N),
    ("grid_y", C::N),
    ("grid_z", C::N),
    ("block_x", C::N),
    ("block_y", C::N),
    ("block_z", C::N),
    ("registers_per_thread", C::N),
    ("shared_memory", C::N),
    ("captured_op", C::Dn),
    ("captured_module", C::Dn),
    ("captured_input_dims", C::Dn),
    ("captured_input_type", C::Dn),
    ("captured_input_strides", C::Dn),
    ("capture_region", C::N),
    ("capture_subsystem", C::Dn),
    ("capture_batch", C::N),
];

const LAUNCHES: &[(&str, C)] = &[
    ("trace", C::D),
    ("id", C::I),
    ("pid", C::N),
    ("tid", C::N),
    ("name", C::D),
    ("start_ns", C::I),
    ("end_ns", C::I),
    ("dur_ns", C::I),
    ("correlation", C::N),
    ("activities", C::I),
    ("activities_dur_ns", C::I),
    ("first_activity_start_ns", C::N),
    ("launch_latency_ns", C::N),
    ("queue_delay_ns", C::N),
    ("graph", C::B),
    ("graph_replay", C::N),
    ("launcher_op_id", C::N),
    ("top_op_id", C::N),
    ("step", C::N),
];

const OPS: &[(&str, C)] = &[
    ("trace", C::D),
    ("id", C::I),
    ("pid", C::N),
    ("tid", C::N),
    ("cat", C::D),
    ("name", C::D),
    ("start_ns", C::I),
    ("end_ns", C::I),
    ("dur_ns", C::I),
    ("parent_id", C::N),
    ("depth", C::I32),
    ("external_id", C::N),
    ("input_dims", C::Dn),
    ("input_type", C::Dn),
];

const STEPS: &[(&str, C)] = &[
    ("trace", C::D),
    ("id", C::I),
    ("name", C::D),
    ("pid", C::N),
    ("tid", C::N),
    ("start_ns", C::I),
    ("end_ns", C::I),
    ("iteration_end_ns", C::N),
    ("grammar", C::D),
    ("context_requests", C::N),
    ("generation_requests", C::N),
    ("generation_tokens", C::N),
];

const MEMORY: &[(&str, C)] = &[
    ("trace", C::D),
    ("id", C::I),
    ("device", C::D),
    ("device_type", C::I),
    ("device_id", C::I),
    ("ts_ns", C::I),
    ("bytes", C::I),
    ("total_allocated", C::N),
    ("total_reserved", C::N),
    ("allocated_bytes", C::N),
    ("addr", C::N),
    ("pid", C::N),
    ("tid", C::N),
    ("step", C::N),
    ("event_index", C::I),
];

fn dict<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    let mut b = StringDictionaryBuilder::<Int32Type>::new();
    for v in values {
        match v {
            Some(s) => {
                b.append_value(s);
            }
            None => b.append_null(),
        }
    }
    Arc::new(b.finish())
}

fn ints(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(values))
}

fn opts(values: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(values.collect::<Int64Array>())
}

/// A correlation id in the Int64 column: null when it does not fit (an
/// id past i64, issue 59; counted and named in a note, `link::wide_ids`).
pub(crate) fn narrow(c: Option<i128>) -> Option<i64> {
    c.and_then(|c| i64::try_from(c).ok())
}

fn id(v: Option<u32>) -> Option<i64> {
    v.map(i64::from)
}

/// "No row" in a row-id array (a row id is below the rows' count, which
/// is below `u32::MAX`).
pub(crate) const NONE: u32 = u32::MAX;

fn nid(v: u32) -> Option<i64> {
    (v != NONE).then(|| i64::from(v))
}

const KINDS: [&str; 3] = ["kernel", "memcpy", "memset"];

/// What each runtime call links to, by call row id ([`NONE`]: nothing).
pub(crate) struct CallLinks {
    pub names: Vec<Sym>,
    /// Its graph replay: its ordinal among the graph launches that
    /// launched work.
    pub replay: Vec<u32>,
    pub launcher: Vec<u32>,
    pub top: Vec<u32>,
    pub step: Vec<u32>,
}

/// The activities' captured launches (issue 57): the captures and the
/// attributed activities sorted by record position.
pub(crate) struct Inside<'a> {
    pub caps: &'a crate::graphs::Captures,
    pub given: &'a [crate::graphs::linked::Given],
}

impl Inside<'_> {
    /// The captured launch of each activity `lo..hi` (`None`: not in an
    /// attributed replay), with its region and whether its shapes are
    /// known (an exact match).
    fn of(
        &self,
        lo: usize,
        hi: usize,
    ) -> Vec<Option<(&crate::graphs::Captured, &crate::graphs::Region, u32, bool)>> {
        let mut v = vec![None; hi - lo];
        let from = self.given.partition_point(|g| (g.pos as usize) < lo);
        for g in self.given[from..]
            .iter()
            .take_while(|g| (g.pos as usize) < hi)
        {
            let Some(region) = self.caps.regions.get(g.region as usize) else {
                continue;
            };
            if let Some(c) = region.launches.get(g.k as usize) {
                v[g.pos as usize - lo] = Some((c, region, g.region, g.exact));
            }
        }
        v
    }

    /// The columns `captured_*` / `capture_*` of activities `lo..hi`.
    fn columns(&self, lo: usize, hi: usize) -> Vec<ArrayRef> {
        let caps = self.caps;
        let at = self.of(lo, hi);
        let op = |c: &crate::graphs::Captured| c.launcher.and_then(|o| caps.ops.get(o as usize));
        let shape = |f: fn(&crate::graphs::CapOp) -> Option<u32>| {
            dict(at.iter().map(|x| {
                x.filter(|x| x.3)
                    .and_then(|x| op(x.0))
                    .and_then(f)
                    .map(|t| caps.resolve(t))
            }))
        };
        vec![
            dict(
                at.iter()
                    .map(|x| x.and_then(|x| op(x.0)).map(|o| caps.resolve(o.name))),
            ),
            dict(
                at.iter()
                    .map(|x| x.and_then(|x| x.0.module).map(|m| caps.resolve(m))),
            ),
            shape(|o| o.dims),
            shape(|o| o.types),
            shape(|o| o.strides),
            opts(at.iter().map(|x| x.map(|x| i64::from(x.2)))),
            dict(at.iter().map(|x| x.map(|x| x.1.subsystem.as_str()))),
            opts(at.iter().map(|x| {
                x.and_then(|x| x.1.batch)
                    .and_then(|b| i64::try_from(b).ok())
            })),
        ]
    }
}

/// What every table of one trace shares: the trace's name, the names, the
/// lanes as integers, the codec.
pub(crate) struct Tables<'a> {
    pub trace: &'a str,
    pub names: &'a Interner,
    /// (pid, tid) of each lane as integers (`None`: not an integer).
    pub lanes: &'a [(Option<i64>, Option<i64>)],
    pub compression: Compression,
}

/// The columns every table starts with: the trace and the row ids.
fn lead(trace: &str, lo: usize, hi: usize) -> [ArrayRef; 2] {
    [
        dict(std::iter::repeat_n(Some(trace), hi - lo)),
        ints(lo as i64..hi as i64),
    ]
}

/// The next `n` items of `it`.
fn take<T>(it: &mut impl Iterator<Item = T>, n: usize) -> Vec<T> {
    it.by_ref().take(n).collect()
}

impl Tables<'_> {
    fn name(&self, s: Sym) -> Option<&str> {
        Some(self.names.resolve(s))
    }

    fn pid(&self, lane: u32) -> Option<i64> {
        self.lanes.get(lane as usize).and_then(|l| l.0)
    }

    fn tid(&self, lane: u32) -> Option<i64> {
        self.lanes.get(lane as usize).and_then(|l| l.1)
    }

    /// The activities table: the records decoded a batch at a time.
    pub fn activities(
        &self,
        path: &Path,
        acts: &Records<Linked>,
        configs: &Configs,
        own: &crate::hostops::launch::Owners,
        calls: &CallLinks,
        inside: &Inside<'_>,
    ) -> Result<u64, WriteFailure> {
        let (mut a_it, mut k_it) = (acts.iter(), configs.iter());
        let call = |o: &Option<u32>| o.map(|c| c as usize);
        let link = |o: &Option<u32>, of: &[u32]| call(o).and_then(|c| nid(of[c]));
        write_table(
            path,
            Table::Activities,
            self.compression,
            acts.len(),
            |lo, hi| {
                let a = take(&mut a_it, hi - lo);
                let k = take(&mut k_it, hi - lo);
                let own: Vec<Option<u32>> = own.range(lo, hi).collect();
                let mut v = lead(self.trace, lo, hi).to_vec();
                v.extend([
                    opts(a.iter().map(|x| self.pid(x.lane))),
                    opts(a.iter().map(|x| self.tid(x.lane))),
                    dict(a.iter().map(|x| Some(KINDS[x.code as usize % 3]))),
                    dict(a.iter().map(|x| self.name(x.name))),
                    ints(a.iter().map(|x| x.ts)),
                    ints(a.iter().map(|x| end_of(x.ts, x.dur))),
                    ints(a.iter().map(|x| x.dur)),
                    opts(a.iter().map(|x| narrow(x.corr))),
                    opts(own.iter().map(|o| id(*o))),
                    dict(
                        own.iter()
                            .map(|o| call(o).and_then(|c| self.name(calls.names[c]))),
                    ),
                    opts(own.iter().map(|o| link(o, &calls.replay))),
                    opts(own.iter().map(|o| link(o, &calls.launcher))),
                    opts(own.iter().map(|o| link(o, &calls.top))),
                    opts(own.iter().map(|o| link(o, &calls.step))),
                ]);
                for d in 0..3 {
                    v.push(opts(k.iter().map(|x| x.grid.map(|g| g[d]))));
                }
                for d in 0..3 {
                    v.push(opts(k.iter().map(|x| x.block.map(|b| b[d]))));
                }
                v.push(opts(k.iter().map(|x| x.registers)));
                v.push(opts(k.iter().map(|x| x.shared_memory)));
                v.extend(inside.columns(lo, hi));
                v
            },
        )
    }

    /// The launches table.
    pub fn launches(
        &self,
        path: &Path,
        calls: &Records<Linked>,
        launched: &[Launch],
        links: &CallLinks,
    ) -> Result<u64, WriteFailure> {
        let mut c_it = calls.iter();
        let ids = |v: &[u32]| opts(v.iter().map(|&x| nid(x)));
        write_table(
            path,
            Table::Launches,
            self.compression,
            calls.len(),
            |lo, hi| {
                let c = take(&mut c_it, hi - lo);
                let la = &launched[lo..hi];
                let mut v = lead(self.trace, lo, hi).to_vec();
                v.extend([
                    opts(c.iter().map(|x| self.pid(x.lane))),
                    opts(c.iter().map(|x| self.tid(x.lane))),
                    dict(c.iter().map(|x| self.name(x.name))),
                    ints(c.iter().map(|x| x.ts)),
                    ints(c.iter().map(|x| end_of(x.ts, x.dur))),
                    ints(c.iter().map(|x| x.dur)),
                    opts(c.iter().map(|x| narrow(x.corr))),
                    ints(la.iter().map(|x| i64::from(x.acts))),
                    ints(la.iter().map(|x| x.gpu)),
                    opts(la.iter().map(|x| x.first())),
                    opts(
                        c.iter()
                            .zip(la)
                            .map(|(x, y)| y.first().map(|f| f.saturating_sub(x.ts))),
                    ),
                    opts(
                        c.iter()
                            .zip(la)
                            .map(|(x, y)| y.first().map(|f| f.saturating_sub(end_of(x.ts, x.dur)))),
                    ),
                    Arc::new(la.iter().map(|x| Some(x.graph)).collect::<BooleanArray>()),
                    ids(&links.replay[lo..hi]),
                    ids(&links.launcher[lo..hi]),
                    ids(&links.top[lo..hi]),
                    ids(&links.step[lo..hi]),
                ]);
                v
            },
        )
    }

    /// The ops table, in file order (row ids are the ops' positions).
    pub fn ops(
        &self,
        path: &Path,
        ops: &LaneOps,
        parent: &[u32],
        depth: &Depths,
        texts: &Texts,
    ) -> Result<u64, WriteFailure> {
        let mut it = ops.in_file_order();
        let cats = crate::hostops::HOST_CATEGORIES;
        write_table(path, Table::Ops, self.compression, ops.len(), |lo, hi| {
            let o: Vec<Op> = take(&mut it, hi - lo);
            let mut v = lead(self.trace, lo, hi).to_vec();
            v.extend([
                opts(o.iter().map(|x| self.pid(x.lane))),
                opts(o.iter().map(|x| self.tid(x.lane))),
                dict(o.iter().map(|x| Some(cats[x.cat as usize % 4]))),
                dict(o.iter().map(|x| self.name(x.name))),
                ints(o.iter().map(|x| x.ts)),
                ints(o.iter().map(|x| end_of(x.ts, x.dur))),
                ints(o.iter().map(|x| x.dur)),
                opts(parent[lo..hi].iter().map(|&p| nid(p))),
                Arc::new(Int32Array::from_iter_values(
                    o.iter()
                        .map(|x| depth.get(x.pos).min(i32::MAX as u32) as i32),
                )),
                opts(o.iter().map(|x| x.ext.external_id)),
                dict(o.iter().map(|x| texts.resolve(x.ext.input_dims))),
                dict(o.iter().map(|x| texts.resolve(x.ext.input_type))),
            ]);
            v
        })
    }

    /// The steps table.
    pub fn steps(
        &self,
        path: &Path,
        steps: &[StepWindow],
        ends: &[Option<i64>],
        grammar: Option<&str>,
    ) -> Result<u64, WriteFailure> {
        let grammar = grammar.unwrap_or("");
        write_table(
            path,
            Table::Steps,
            self.compression,
            steps.len(),
            |lo, hi| {
                let s = &steps[lo..hi];
                let parsed: Vec<Option<crate::steps::Step>> =
                    s.iter().map(|w| crate::steps::parse(&w.name)).collect();
                let mut v = lead(self.trace, lo, hi).to_vec();
                v.extend([
                    dict(s.iter().map(|w| Some(w.name.as_str()))),
                    opts(s.iter().map(|w| w.lane.0.parse().ok())),
                    opts(s.iter().map(|w| w.lane.1.parse().ok())),
                    ints(s.iter().map(|w| w.start)),
                    ints(s.iter().map(|w| w.ann_end)),
                    opts(ends[lo..hi].iter().copied()),
                    dict(std::iter::repeat_n(Some(grammar), hi - lo)),
                    // A count past i64 (a name's count past u64 is kept
                    // as u64::MAX, issue 59) is null, never wrapped.
                    opts(
                        parsed
                            .iter()
                            .map(|p| p.as_ref().and_then(|p| i64::try_from(p.context_reqs).ok())),
                    ),
                    opts(parsed.iter().map(|p| {
                        p.as_ref()
                            .and_then(|p| i64::try_from(p.generation_reqs).ok())
                    })),
                    opts(parsed.iter().map(|p| {
                        p.as_ref()
                            .and_then(|p| p.generation_tokens)
                            .and_then(|t| i64::try_from(t).ok())
                    })),
                ]);
                v
            },
        )
    }
}

/// The step window holding `ts` (M5: the latest step starting at or
/// before it whose window has not closed), as a step id.
fn step_at(steps: &[StepWindow], ends: &[Option<i64>], ts: i64) -> Option<i64> {
    let k = steps.partition_point(|w| w.start <= ts);
    (0..k)
        .rev()
        .find(|&j| ends[j].is_none_or(|e| ts < e))
        .map(|j| j as i64)
}

impl Tables<'_> {
    /// The memory table: one row per `[memory]` event in M1's order (by
    /// device, then time), with the device's level after it (M2).
    pub fn memory(
        &self,
        path: &Path,
        mem: &AllocEvents,
        lanes: &LaneTable,
        steps: &[StepWindow],
        ends: &[Option<i64>],
    ) -> Result<u64, WriteFailure> {
        let mut level: Vec<i128> = Vec::with_capacity(mem.events.len());
        let mut labels: Vec<String> = Vec::with_capacity(mem.devices.len());
        for &(t, id) in &mem.devices {
            labels.push(device_label(t, id));
        }
        for (_, recs) in mem.by_device() {
            level.extend(levels(recs, absolute(recs)));
        }
        let num = |p: &ThreadPart| match p {
            ThreadPart::Num(n) => Some(*n),
            ThreadPart::Str(_) => None,
        };
        let e = &mem.events;
        write_table(path, Table::Memory, self.compression, e.len(), |lo, hi| {
            let r = &e[lo..hi];
            let dev = |x: &AllocEvent| mem.devices[x.device as usize];
            let mut v = lead(self.trace, lo, hi).to_vec();
            v.extend([
                dict(r.iter().map(|x| Some(labels[x.device as usize].as_str()))),
                ints(r.iter().map(|x| dev(x).0)),
                ints(r.iter().map(|x| dev(x).1)),
                ints(r.iter().map(|x| x.ts)),
                ints(r.iter().map(|x| x.bytes)),
                opts(r.iter().map(AllocEvent::total_allocated)),
                opts(r.iter().map(AllocEvent::total_reserved)),
                opts(level[lo..hi].iter().map(|&l| i64::try_from(l).ok())),
                opts(r.iter().map(|x| narrow(x.addr))),
                opts(r.iter().map(|x| num(&lanes.resolve(x.lane).pid))),
                opts(r.iter().map(|x| num(&lanes.resolve(x.lane).tid))),
                opts(r.iter().map(|x| step_at(steps, ends, x.ts))),
                ints(r.iter().map(|x| x.index as i64)),
            ]);
            v
        })
    }
}

fn properties(compression: Compression, sch: &SchemaRef) -> WriterProperties {
    use parquet::basic::{Compression as P, ZstdLevel};
    let codec = match compression {
        Compression::Zstd => P::ZSTD(ZstdLevel::default()),
        Compression::Snappy => P::SNAPPY,
        Compression::None => P::UNCOMPRESSED,
    };
    let mut b = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_encoding(parquet::basic::Encoding::DELTA_BINARY_PACKED);
    for f in sch.fields() {
        if matches!(f.data_type(), DataType::Dictionary(..)) {
            b = b.set_column_dictionary_enabled(f.name().as_str().into(), true);
        }
        if !matches!(f.data_type(), DataType::Int64 | DataType::Int32) {
            b = b.set_column_encoding(f.name().as_str().into(), parquet::basic::Encoding::PLAIN);
        }
    }
    b.set_compression(codec)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("torchtrace {}", env!("CARGO_PKG_VERSION")))
        .build()
}

fn failure(path: &Path, e: impl std::fmt::Display) -> WriteFailure {
    WriteFailure {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// A new Parquet file at `path` with `table`'s schema.
fn writer(path: &Path, table: Table, c: Compression) -> Result<ArrowWriter<File>, WriteFailure> {
    let f = create_new(path).map_err(|e| failure(path, e))?;
    ArrowWriter::try_new(f, schema(table), Some(properties(c, &schema(table))))
        .map_err(|e| failure(path, e))
}

/// Writes `n` rows of `table` at `path`, the columns of rows `[lo, hi)`
/// built by `columns` a record batch at a time, in order.
fn write_table(
    path: &Path,
    table: Table,
    c: Compression,
    n: usize,
    mut columns: impl FnMut(usize, usize) -> Vec<ArrayRef>,
) -> Result<u64, WriteFailure> {
    let mut w = writer(path, table, c)?;
    let sch = schema(table);
    let mut lo = 0;
    while lo < n {
        let hi = (lo + BATCH_ROWS).min(n);
        let batch =
            RecordBatch::try_new(sch.clone(), columns(lo, hi)).map_err(|e| failure(path, e))?;
        w.write(&batch).map_err(|e| failure(path, e))?;
        lo = hi;
    }
    w.close().map_err(|e| failure(path, e))?;
    Ok(n as u64)
}

/// A file that did not exist, created exclusively (`O_EXCL`: never an
/// existing file, never through a symbolic link at the name). Every
/// temporary file of an export is made so (issue 59).
fn create_new(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |e| ExportError::io(path, e)
}

fn pq_err(path: &Path) -> impl FnOnce(parquet::errors::ParquetError) -> ExportError + '_ {
    move |e| failure(path, e).into_error()
}

/// A part file to copy, and the texts of the columns that replace its
/// `trace` column (none: its columns copied as they are).
pub(crate) struct PartLead<'a> {
    pub file: &'a Path,
    pub lead: Vec<Option<&'a str>>,
}

/// The columns of a campaign's table (`batch --tables`): `trace`,
/// `workload`, `mode`, then the table's own after its `trace`.
pub fn campaign_schema(table: Table) -> SchemaRef {
    let own = schema(table);
    let mut fields = vec![
        Field::new("trace", dict_type(), false),
        Field::new("workload", dict_type(), true),
        Field::new("mode", dict_type(), true),
    ];
    fields.extend(own.fields().iter().skip(1).map(|f| f.as_ref().clone()));
    Arc::new(Schema::new(fields))
}

/// Copies `parts`, in order, into `to` (schema `sch`), batch by batch.
pub(crate) fn copy_parts(
    parts: &[PartLead<'_>],
    sch: &SchemaRef,
    to: &Path,
    c: Compression,
) -> Result<(), ExportError> {
    let f = create_new(to).map_err(io_err(to))?;
    let mut w =
        ArrowWriter::try_new(f, sch.clone(), Some(properties(c, sch))).map_err(pq_err(to))?;
    for p in parts {
        let from = p.file;
        let f = File::open(from).map_err(io_err(from))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(f)
            .and_then(|b| b.with_batch_size(BATCH_ROWS).build())
            .map_err(pq_err(from))?;
        for batch in reader {
            let batch = batch.map_err(|e| failure(from, e).into_error())?;
            let columns = if p.lead.is_empty() {
                batch.columns().to_vec()
            } else {
                let n = batch.num_rows();
                let mut v: Vec<ArrayRef> = p
                    .lead
                    .iter()
                    .map(|t| dict(std::iter::repeat_n(*t, n)))
                    .collect();
                v.extend(batch.columns().iter().skip(1).cloned());
                v
            };
            let batch = RecordBatch::try_new(sch.clone(), columns)
                .map_err(|e| failure(from, e).into_error())?;
            w.write(&batch).map_err(pq_err(to))?;
        }
    }
    w.close().map_err(pq_err(to))?;
    Ok(())
}

/// Copies the parts of `table`, in trace order, into `to`.
fn merge(traces: &[TracePart], table: Table, to: &Path, c: Compression) -> Result<(), ExportError> {
    let parts: Vec<PartLead<'_>> = traces
        .iter()
        .flat_map(|t| &t.parts)
        .filter(|p| p.table == table)
        .map(|p| PartLead {
            file: Path::new(&p.file),
            lead: Vec::new(),
        })
        .collect();
    copy_parts(&parts, &schema(table), to, c)
}

/// The final files, `out/<table>.parquet`, from every trace's parts: one
/// trace's are renamed, several traces' copied one after another. Each is
/// written under a temporary name in the run's own folder `parts` and
/// renamed when complete (a rename replaces a link at the final name, it
/// never writes through it).
pub(crate) fn finalize(
    traces: &[TracePart],
    tables: &[Table],
    out: &Path,
    parts: &Path,
    c: Compression,
) -> Result<Vec<TableFile>, ExportError> {
    let mut files = Vec::new();
    for &table in tables {
        let to = out.join(table.file_name());
        let rows = traces
            .iter()
            .flat_map(|t| &t.parts)
            .filter(|p| p.table == table)
            .map(|p| p.rows)
            .sum();
        match traces {
            [one] => {
                let from = one
                    .parts
                    .iter()
                    .find(|p| p.table == table)
                    .map(|p| PathBuf::from(&p.file))
                    .ok_or(crate::command::ApiError::NotRun("export"))?;
                std::fs::rename(&from, &to).map_err(io_err(&to))?;
            }
            _ => {
                let partial = parts.join(format!("{}.partial", table.file_name()));
                let merged = merge(traces, table, &partial, c)
                    .and_then(|()| std::fs::rename(&partial, &to).map_err(io_err(&to)));
                if let Err(e) = merged {
                    let _ = std::fs::remove_file(&partial);
                    return Err(e);
                }
            }
        }
        files.push(TableFile {
            table: table.as_str().to_string(),
            path: to.display().to_string(),
            rows,
        });
    }
    Ok(files)
}
