//! CSV output (RFC 4180 quoting by the `csv` crate). Several tables are
//! separated by one blank line; numbers keep full precision, missing values
//! are empty.

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
    w.write_record(&t.headers)?;
    for r in &t.rows {
        w.write_record(r.iter().map(|c| c.raw()))?;
    }
    w.flush()?;
    Ok(())
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
}
