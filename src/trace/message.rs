//! Showing input bytes inside error messages.
//!
//! A message is one terminal line, so whatever of the input it quotes must
//! be short and printable: a damaged file can put a 10 GB string, NULs or
//! escape sequences exactly where a message would quote it. Everything a
//! [`super::ReadError`] quotes from the input goes through here.

use std::fmt::Write;

/// How many bytes of a value a message shows before cutting it.
pub const SHOW: usize = 80;

/// Input bytes as printable text: at most [`SHOW`] bytes, control
/// characters, NULs and invalid UTF-8 escaped, and `… (N bytes)` after a cut.
pub fn clip(bytes: &[u8]) -> String {
    let cut = bytes.len() > SHOW;
    let shown = &bytes[..bytes.len().min(SHOW)];
    let mut out = String::with_capacity(shown.len() + 16);
    for chunk in shown.utf8_chunks() {
        escape_into(chunk.valid(), &mut out);
        for b in chunk.invalid() {
            // A multi-byte character cut at SHOW lands here too: showing
            // its first bytes as hex is honest about what was cut.
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    if cut {
        let _ = write!(out, "… ({} bytes)", bytes.len());
    }
    out
}

/// [`clip`] for text that is already a `str`.
pub fn clip_str(text: &str) -> String {
    clip(text.as_bytes())
}

/// `text` with control characters and NULs escaped as [`clip`] escapes
/// them, but never cut: for outputs (Markdown) that must show a name whole.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(text, &mut out);
    out
}

/// One byte of input, as a message shows it: `x`, `\0`, `\x1b`, `\xff`.
pub fn show_byte(b: u8) -> String {
    match b {
        0x20..=0x7e => (b as char).to_string(),
        _ => clip(&[b]),
    }
}

fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '\0' => out.push_str("\\0"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// A message from a parser (serde_json), made safe to print: control
/// characters escaped and every quoted stretch longer than [`SHOW`] bytes
/// cut. serde quotes the offending value itself (`invalid type: string
/// "…", expected …`), and that value can be as large as the event.
pub fn tidy(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(4 * SHOW));
    let mut rest = msg;
    while let Some(open) = rest.find('"') {
        escape_into(&rest[..=open], &mut out);
        let body = &rest[open + 1..];
        let close = closing_quote(body).unwrap_or(body.len());
        let quoted = &body[..close];
        if quoted.len() > SHOW {
            out.push_str(&clip(quoted.as_bytes()));
        } else {
            escape_into(quoted, &mut out);
        }
        rest = &body[close..];
        if let Some(after) = rest.strip_prefix('"') {
            out.push('"');
            rest = after;
        }
    }
    escape_into(rest, &mut out);
    out
}

/// Index of the quote that ends a backslash-escaped quoted stretch.
fn closing_quote(body: &str) -> Option<usize> {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Bytes as a binary unit (`64 MiB`, `1.5 GiB`, `100 bytes`).
pub fn size(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, unit) in UNITS {
        if n >= unit {
            return if n.is_multiple_of(unit) {
                format!("{} {name}", n / unit)
            } else {
                format!("{:.1} {name}", n as f64 / unit as f64)
            };
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_long_values_and_escapes_controls() {
        assert_eq!(clip(b"ab\0c\x1b\n"), "ab\\0c\\u{1b}\\n");
        assert_eq!(clip(b"\xff"), "\\xff");
        let long = vec![b'a'; 1000];
        let shown = clip(&long);
        assert!(shown.starts_with(&"a".repeat(SHOW)));
        assert!(shown.ends_with("a… (1000 bytes)"), "{shown}");
        assert_eq!(show_byte(b'{'), "{");
        assert_eq!(show_byte(0), "\\0");
        assert_eq!(show_byte(0xef), "\\xef");
    }

    #[test]
    fn tidies_parser_messages() {
        let long = "x".repeat(500);
        let msg = format!("invalid type: string \"{long}\", expected struct Args");
        let t = tidy(&msg);
        assert!(t.len() < 150, "{t}");
        assert!(t.contains("… (500 bytes)\", expected struct Args"), "{t}");
        assert_eq!(tidy("a \"b\\\"c\" d"), "a \"b\\\"c\" d");
        assert_eq!(tidy("unclosed \"abc"), "unclosed \"abc");
        assert_eq!(tidy("nul\0"), "nul\\0");
    }

    #[test]
    fn sizes() {
        assert_eq!(size(64 << 20), "64 MiB");
        assert_eq!(size(100), "100 bytes");
        assert_eq!(size(1536 << 20), "1.5 GiB");
    }
}
