//! CSV output (RFC 4180 quoting by the `csv` crate). Several tables are
//! separated by one blank line; numbers keep full precision, missing values
//! are empty. Control characters in text (ESC, BEL, NUL, CSI, line
//! breaks, tabs) are escaped as the terminal table and `-f markdown`
//! escape them (`\u{1b}`, `\0`, `\n`): a CSV is often `cat` to a
//! terminal, and a name from a hostile trace must not drive it (issue 59).

use super::Table;
use std::io::{self, Write};

pub fn write<W: Write>(out: &mut W, tables: &[Table]) -> io::Result<()> {
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        write_one(out, t)?;
    }
    Ok(())
}

pub fn write_one<W: Write>(out: &mut W, t: &Table) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(&mut *out);
    w.write_record(t.headers.iter().map(|h| escape(h)))?;
    for r in &t.rows {
        w.write_record(r.iter().map(|c| escape(&c.raw())))?;
    }
    w.flush()?;
    Ok(())
}

/// A CSV field: control characters escaped; numbers and plain text as
/// they are.
fn escape(s: &str) -> String {
    crate::trace::message::escape(s)
}

/// One table as a CSV string (for files written by `batch`).
pub fn to_string(t: &Table) -> String {
    let mut buf = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_one(&mut buf, t);
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Cell;

    /// Values from sample_traces/text_ar's kernels CSV (issue 60): the
    /// interpolated p10 of the GPU span carried binary noise.
    #[test]
    fn floats_without_binary_noise() {
        use crate::report::machine_float;
        assert_eq!(machine_float(0.34599559999999996), "0.3459956");
        assert_eq!(machine_float(0.30880490000000005), "0.3088049");
        assert_eq!(machine_float(0.3627180625), "0.3627180625");
        assert_eq!(machine_float(44.23529411764706), "44.2352941176471");
        assert_eq!(machine_float(0.0), "0");
        assert_eq!(machine_float(f64::NAN), "NaN");
    }

    #[test]
    fn quotes_and_precision() {
        let mut t = Table::new("x", &["name", "v", "n"]);
        t.row(vec![
            Cell::text("a,\"b\""),
            Cell::Float(0.1234567891234, 2),
            Cell::Null,
        ]);
        assert_eq!(
            to_string(&t),
            "name,v,n\n\"a,\"\"b\"\"\",0.1234567891234,\n"
        );
    }

    #[test]
    fn escapes_control_characters() {
        let mut t = Table::new("x", &["na\x1bme"]);
        t.row(vec![Cell::text("k\x1b[2J\x07\0\u{9b}1m\n")]);
        assert_eq!(
            to_string(&t),
            "na\\u{1b}me\nk\\u{1b}[2J\\u{7}\\0\\u{9b}1m\\n\n"
        );
    }
}
