//! Opening a trace: a path or `-` for stdin, gzip recognised by its magic
//! bytes (not the file name), multi-member gzip accepted.
//!
//! Decompression runs on its own thread (`super::pipe`) so that inflating
//! (one core) and scanning/parsing (the other) overlap.

use super::pipe::PipeReader;
use super::ReadError;
use flate2::bufread::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What the first bytes of the input say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Gzip,
    Json,
}

/// Where a trace comes from, for messages.
pub const STDIN: &str = "-";

/// Counts bytes read from the underlying (compressed) source, so progress
/// bars can show how far into a file we are.
pub struct CountingReader<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> CountingReader<R> {
    pub fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        Self { inner, count }
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The trace formats torchtrace reads. One today: Kineto's JSON. A second
/// one (say Perfetto's protobuf) would be a variant here, recognised by
/// [`Format::of`], and a module beside [`super::kineto`] that produces the
/// same [`super::Event`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    KinetoJson,
}

/// A UTF-8 byte-order mark; accepted before JSON.
const BOM: &[u8] = b"\xef\xbb\xbf";

impl Format {
    /// The format of a text that starts with `head` (uncompressed), or
    /// `None` when it is none torchtrace reads. Text that is only
    /// whitespace so far counts as JSON: the reader says what it holds.
    pub fn of(head: &[u8]) -> Option<Format> {
        let text = head.strip_prefix(BOM).unwrap_or(head);
        match text.iter().copied().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') | Some(b'[') | None => Some(Format::KinetoJson),
            Some(_) => None,
        }
    }
}

/// Sniffs the encoding from the first bytes of a buffered source.
pub fn sniff<R: BufRead>(r: &mut R) -> Result<Encoding, ReadError> {
    let head = r.fill_buf().map_err(ReadError::Io)?;
    if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
        return Ok(Encoding::Gzip);
    }
    if head.is_empty() {
        return Err(ReadError::Empty);
    }
    if wide_text(head).is_some() {
        // `{` then NULs passes a first-character test, yet is UTF-16/32.
        return Err(ReadError::NotTrace {
            found: describe_head(head),
        });
    }
    match Format::of(head) {
        Some(Format::KinetoJson) => Ok(Encoding::Json),
        None => Err(ReadError::NotTrace {
            found: describe_head(head),
        }),
    }
}

fn describe_head(head: &[u8]) -> String {
    let n = head.len().min(8);
    let hex: Vec<String> = head[..n].iter().map(|b| format!("{b:02x}")).collect();
    let what = match wide_text(head) {
        Some(enc) => format!(": {enc} text, save it as UTF-8"),
        None => String::new(),
    };
    format!("first bytes {}{what}", hex.join(" "))
}

/// `"UTF-32"` or `"UTF-16"` when the first bytes are such text: by its
/// byte-order mark (UTF-32's LE mark `ff fe 00 00` begins with UTF-16's),
/// else by the NULs around a first ASCII character.
fn wide_text(head: &[u8]) -> Option<&'static str> {
    let at = |i: usize| head.get(i).copied();
    let ascii = |b: Option<u8>| b.is_some_and(|b| (1..0x80).contains(&b));
    if head.starts_with(&[0xff, 0xfe, 0, 0]) || head.starts_with(&[0, 0, 0xfe, 0xff]) {
        return Some("UTF-32");
    }
    if head.starts_with(&[0xff, 0xfe]) || head.starts_with(&[0xfe, 0xff]) {
        return Some("UTF-16");
    }
    let (a, b, c, d) = (at(0), at(1), at(2), at(3));
    let zero = |x: Option<u8>| x == Some(0);
    if (ascii(a) && zero(b) && zero(c) && zero(d)) || (zero(a) && zero(b) && zero(c) && ascii(d)) {
        return Some("UTF-32");
    }
    if (ascii(a) && zero(b)) || (zero(a) && ascii(b)) {
        return Some("UTF-16");
    }
    None
}

/// Opens a path (or `-`) and returns a reader of the decompressed JSON text.
///
/// `counter` receives the number of raw (compressed) bytes consumed.
pub fn open_decoded(
    path: &Path,
    counter: Arc<AtomicU64>,
) -> Result<Box<dyn Read + Send>, ReadError> {
    let raw: Box<dyn Read + Send> = if path.as_os_str() == STDIN {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path).map_err(ReadError::Open)?)
    };
    decode(raw, counter)
}

/// Wraps any byte source: sniffs gzip and returns the decompressed stream,
/// inflated on a separate thread.
pub fn decode(
    raw: Box<dyn Read + Send>,
    counter: Arc<AtomicU64>,
) -> Result<Box<dyn Read + Send>, ReadError> {
    let mut buffered = BufReader::with_capacity(256 * 1024, CountingReader::new(raw, counter));
    match sniff(&mut buffered)? {
        Encoding::Gzip => Ok(Box::new(PipeReader::spawn(MultiGzDecoder::new(buffered)))),
        Encoding::Json => Ok(Box::new(buffered)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all(bytes: Vec<u8>) -> Result<Vec<u8>, ReadError> {
        let mut r = decode(Box::new(io::Cursor::new(bytes)), Arc::default())?;
        let mut out = Vec::new();
        r.read_to_end(&mut out).map_err(ReadError::Io)?;
        Ok(out)
    }

    #[test]
    fn plain_json_passes_through() {
        assert_eq!(read_all(b" {\"a\":1}".to_vec()).unwrap(), b" {\"a\":1}");
    }

    #[test]
    fn gzip_by_magic_and_multi_member() {
        let mut two = gz(b"{\"traceEvents\":");
        two.extend(gz(b"[]}"));
        assert_eq!(read_all(two).unwrap(), b"{\"traceEvents\":[]}");
    }

    #[test]
    fn neither_gzip_nor_json() {
        let err = read_all(b"PK\x03\x04zip".to_vec()).unwrap_err();
        assert!(matches!(err, ReadError::NotTrace { .. }), "{err}");
        assert!(matches!(
            read_all(Vec::new()).unwrap_err(),
            ReadError::Empty
        ));
    }

    #[test]
    fn byte_order_marks() {
        assert_eq!(
            read_all(b"\xef\xbb\xbf{}".to_vec()).unwrap(),
            b"\xef\xbb\xbf{}"
        );
        let err = read_all(b"\xff\xfe{\0}\0".to_vec()).unwrap_err();
        assert!(err.to_string().contains("UTF-16"), "{err}");
        for (bytes, enc) in [
            (&b"\xff\xfe\0\0{\0\0\0"[..], "UTF-32"),
            (b"\0\0\xfe\xff\0\0\0{", "UTF-32"),
            (b"{\0\0\0\"\0\0\0", "UTF-32"),
            (b"\0\0\0{\0\0\0\"", "UTF-32"),
            (b"{\0\"\0", "UTF-16"),
            (b"\0{\0\"", "UTF-16"),
        ] {
            let e = sniff(&mut &bytes[..]).unwrap_err().to_string();
            assert!(
                e.contains(&format!(": {enc} text, save it as UTF-8")),
                "{e}"
            );
        }
    }

    #[test]
    fn truncated_gzip_is_an_io_error() {
        let full = gz(&b"{\"traceEvents\":[]}".repeat(1000));
        let cut = full[..full.len() / 2].to_vec();
        assert!(read_all(cut).is_err());
    }
}
