//! JSON output: the serde value, pretty-printed, full f64 precision.

use serde::Serialize;
use std::io::{self, Write};

pub fn write<W: Write, T: Serialize>(out: &mut W, value: &T) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(io::Error::other)?;
    writeln!(out)
}
