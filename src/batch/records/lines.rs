//! The records file's lines: written (header, one line per file, end
//! line) and read back, each line capped at the event size limit, a header
//! of another schema refused with its version.

use super::{Header, RecordError, SCHEMA};
use crate::batch::FileResult;
use crate::trace::ReadOptions;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::Path;

/// The records of one shard (or of a whole campaign, or of one task's
/// unit): its header, its rows, and whether it got to its end line.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSet {
    pub header: Header,
    pub files: Vec<FileResult>,
    /// False when the end line is missing: the shard stopped early.
    pub complete: bool,
}

/// One line of a records file, as read.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Line {
    Header(Box<Header>),
    File(Box<FileResult>),
    End { files: usize },
}

/// One line of a records file, as written (the same JSON as [`Line`],
/// borrowing what it writes).
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum LineOut<'a> {
    Header(&'a Header),
    File(&'a FileResult),
    End { files: usize },
}

/// A record line, internals included.
pub(super) fn to_line(l: &LineOut<'_>) -> String {
    crate::record::with_internals(|| serde_json::to_string(l).unwrap_or_default())
}

/// Writes a records file: header, one line per file, end line.
pub fn write_records<W: Write>(
    mut w: W,
    header: &Header,
    files: &[FileResult],
) -> std::io::Result<()> {
    crate::record::with_internals(|| -> std::io::Result<()> {
        let line = |w: &mut W, l: &LineOut<'_>| -> std::io::Result<()> {
            serde_json::to_writer(&mut *w, l)?;
            w.write_all(b"\n")
        };
        line(&mut w, &LineOut::Header(header))?;
        for f in files {
            line(&mut w, &LineOut::File(f))?;
        }
        line(&mut w, &LineOut::End { files: files.len() })?;
        w.flush()
    })
}

/// One file's row as a JSON record line (`{"file":{…}}`), internals included.
pub fn file_line(f: &FileResult) -> String {
    to_line(&LineOut::File(f))
}

/// A header as a JSON record line (`{"header":{…}}`).
pub fn header_line(h: &Header) -> String {
    to_line(&LineOut::Header(h))
}

/// Reads a records file (`-`: stdin). A file that stops before its end
/// line is kept, marked incomplete (its shard did not finish).
pub fn read_records(path: &Path, read: &ReadOptions) -> Result<RecordSet, RecordError> {
    let shown = path.display().to_string();
    let io = |source| RecordError::Io {
        path: shown.clone(),
        source,
    };
    let reader: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(path).map_err(io)?,
        ))
    };
    parse_lines(
        &shown,
        CappedLines::new(reader, read.max_event_bytes, shown.clone()),
    )
}

/// The lines of a records file, each at most `limit` bytes (the limit on
/// one trace event, `TORCHTRACE_MAX_EVENT_SIZE`): a longer line is an
/// error naming the file and line, read no further than the limit, so a
/// huge line is never held whole. A UTF-8 byte-order mark before the first
/// line is dropped.
pub(super) struct CappedLines<R> {
    pub(super) reader: R,
    pub(super) limit: u64,
    pub(super) shown: String,
    pub(super) line: usize,
    pub(super) done: bool,
}

impl<R: BufRead> CappedLines<R> {
    pub(super) fn new(reader: R, limit: u64, shown: String) -> Self {
        CappedLines {
            reader,
            limit,
            shown,
            line: 0,
            done: false,
        }
    }

    /// The next line's bytes without its `\n`; `None` at the end.
    pub(super) fn next_bytes(&mut self) -> Result<Option<Vec<u8>>, RecordError> {
        let mut buf = Vec::new();
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(RecordError::Io {
                        path: self.shown.clone(),
                        source,
                    })
                }
            };
            if chunk.is_empty() {
                return Ok((!buf.is_empty()).then_some(buf));
            }
            let (take, end) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if (buf.len() + take) as u64 > self.limit {
                return Err(self.too_long());
            }
            buf.extend_from_slice(&chunk[..take]);
            self.reader.consume(take + usize::from(end));
            if end {
                return Ok(Some(buf));
            }
        }
    }

    /// The error for a line over the limit.
    pub(super) fn too_long(&self) -> RecordError {
        RecordError::Layout {
            path: self.shown.clone(),
            line: self.line,
            what: format!(
                "the line is longer than the {} limit on one record line (set {}, e.g. to 1G, to raise it)",
                crate::trace::message::size(self.limit),
                crate::trace::MAX_EVENT_SIZE_ENV
            ),
        }
    }
}

impl<R: BufRead> Iterator for CappedLines<R> {
    type Item = Result<String, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.line += 1;
        let res = self.next_bytes().and_then(|bytes| {
            let Some(mut bytes) = bytes else {
                return Ok(None);
            };
            if self.line == 1 && bytes.starts_with(b"\xef\xbb\xbf") {
                bytes.drain(..3);
            }
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
            String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| RecordError::Layout {
                    path: self.shown.clone(),
                    line: self.line,
                    what: "not UTF-8 text".into(),
                })
        });
        match res {
            Ok(Some(text)) => Some(Ok(text)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Parses record lines (`{"header":…}`, `{"file":…}`, `{"end":…}`).
pub fn parse_lines<I>(shown: &str, lines: I) -> Result<RecordSet, RecordError>
where
    I: IntoIterator<Item = Result<String, RecordError>>,
{
    let layout = |line: usize, what: &str| RecordError::Layout {
        path: shown.to_string(),
        line,
        what: what.to_string(),
    };
    let mut header: Option<Header> = None;
    let mut files = Vec::new();
    let mut ended: Option<usize> = None;
    let mut lines = lines.into_iter().enumerate().peekable();
    while let Some((n, text)) = lines.next() {
        let (n, text) = (n + 1, text?);
        if text.trim().is_empty() {
            continue;
        }
        if ended.is_some() {
            return Err(layout(n, "a line after the end line"));
        }
        let mut parsed: Result<Line, _> = serde_json::from_str(&text);
        if parsed.is_err() {
            // Results are decoded through their registry entry, which
            // reports a syntax error as a data error: ask the plain parser
            // what is wrong with the text itself.
            if let Err(syntax) = serde_json::from_str::<serde::de::IgnoredAny>(&text) {
                // A writer stopped mid-line: the last line ends early. The
                // shard is incomplete, not unreadable.
                if syntax.is_eof() && header.is_some() && lines.peek().is_none() {
                    break;
                }
                parsed = Err(syntax);
            }
        }
        let parsed: Line = parsed.map_err(|source| {
            schema_of(&text)
                .filter(|&s| s != SCHEMA)
                .map(|found| RecordError::Schema {
                    path: shown.to_string(),
                    found,
                })
                .unwrap_or(RecordError::Json {
                    path: shown.to_string(),
                    line: n,
                    source,
                })
        })?;
        match (parsed, &header) {
            (Line::Header(h), None) if h.schema != SCHEMA => {
                return Err(RecordError::Schema {
                    path: shown.to_string(),
                    found: h.schema,
                })
            }
            (Line::Header(h), None) => header = Some(*h),
            (Line::Header(_), Some(_)) => return Err(layout(n, "a second header")),
            (_, None) => return Err(layout(n, "records must start with a header line")),
            (Line::File(f), Some(_)) => files.push(*f),
            (Line::End { files: count }, Some(_)) if count != files.len() => {
                return Err(layout(
                    n,
                    &format!(
                        "the end line counts {count} files, {} precede it",
                        files.len()
                    ),
                ))
            }
            (Line::End { .. }, Some(_)) => ended = Some(n),
        }
    }
    let header = header.ok_or_else(|| layout(0, "empty: no header line"))?;
    Ok(RecordSet {
        header,
        files,
        complete: ended.is_some(),
    })
}

/// The schema a header line of another version declares, if it does.
pub(super) fn schema_of(text: &str) -> Option<u32> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("header")?.get("schema")?.as_u64()?.try_into().ok()
}
