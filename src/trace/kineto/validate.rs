//! A streaming JSON validator for the top-level values nobody reads: they
//! are passed over without being held (any size), yet must still be JSON.
//! Fed the input in pieces; memory is its nesting stack (bounded) and one
//! number or literal (bounded).

/// Deepest nesting accepted (one byte of stack per level).
const MAX_DEPTH: usize = 1 << 20;

/// The longest number or literal accepted.
const MAX_SCALAR: usize = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Value,
    /// After `[`: a value or `]`.
    FirstValueOrEnd,
    /// After `{`: a key or `}`.
    FirstKeyOrEnd,
    /// After `,` in an object.
    Key,
    Colon,
    CommaOrEnd,
}

/// Where a string being validated is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Str {
    Out,
    In,
    /// After a backslash.
    Escape,
    /// Hex digits of a `\u` escape still to come.
    Hex(u8),
}

/// The state between two pieces of input.
#[derive(Debug)]
pub(super) struct Validator {
    stack: Vec<u8>,
    expect: Expect,
    string: Str,
    key: bool,
    scalar: Vec<u8>,
}

impl Default for Validator {
    fn default() -> Self {
        Validator {
            stack: Vec::new(),
            expect: Expect::Value,
            string: Str::Out,
            key: false,
            scalar: Vec::new(),
        }
    }
}

/// What one step of [`Validator::feed`] did.
enum Step {
    /// The value goes on at this offset of the piece.
    At(usize),
    /// The value ended after this many bytes of the piece.
    Done(usize),
}

/// A step, or the offset in the piece of a byte that is not JSON and why.
type Fed = Result<Step, (usize, String)>;

/// "expected `what`", for byte `b` at offset `i`.
fn bad(b: u8, i: usize, what: &str) -> Fed {
    let found = super::super::message::show_byte(b);
    Err((i, format!("expected {what}, found `{found}`")))
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

impl Validator {
    /// Validates the next piece of the value. `Ok(Some(n))`: the value
    /// ended after `n` bytes of `piece`; `Ok(None)`: all of it was used and
    /// the value goes on; `Err((k, why))`: byte `k` of `piece` is not JSON.
    pub(super) fn feed(&mut self, piece: &[u8]) -> Result<Option<usize>, (usize, String)> {
        let mut i = 0;
        while i < piece.len() {
            let step = match self.string {
                Str::Out => self.outside(piece[i], i)?,
                Str::In => self.string_run(piece, i)?,
                Str::Escape | Str::Hex(_) => self.escape(piece[i], i)?,
            };
            match step {
                Step::At(next) => i = next,
                Step::Done(n) => return Ok(Some(n)),
            }
        }
        Ok(None)
    }

    /// Inside a string at offset `i`: up to its closing quote or the next
    /// backslash (or the piece's end), in one search.
    fn string_run(&mut self, piece: &[u8], mut i: usize) -> Fed {
        let rest = &piece[i..];
        let k = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
        if let Some(c) = rest[..k].iter().position(|&c| c < 0x20) {
            return Err((i + c, "a control character inside a string".into()));
        }
        i += k;
        match piece.get(i) {
            Some(b'"') => {
                self.string = Str::Out;
                i += 1;
                if self.key {
                    self.expect = Expect::Colon;
                } else if self.end_value() {
                    return Ok(Step::Done(i));
                }
            }
            Some(_) => {
                self.string = Str::Escape;
                i += 1;
            }
            None => {}
        }
        Ok(Step::At(i))
    }

    /// Byte `b` (at `i`) after a backslash, or of a `\u` escape's digits.
    fn escape(&mut self, b: u8, i: usize) -> Fed {
        self.string = match self.string {
            Str::Hex(n) if b.is_ascii_hexdigit() => match n {
                2.. => Str::Hex(n - 1),
                _ => Str::In,
            },
            Str::Hex(_) => return Err((i, "an invalid \\u escape in a string".into())),
            _ => match b {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Str::In,
                b'u' => Str::Hex(4),
                _ => return Err((i, "an invalid escape in a string".into())),
            },
        };
        Ok(Step::At(i + 1))
    }

    /// Byte `b` (at `i`) outside strings.
    fn outside(&mut self, b: u8, i: usize) -> Fed {
        if !self.scalar.is_empty() {
            if let Some(step) = self.scalar_byte(b, i)? {
                return Ok(step);
            }
        }
        if is_ws(b) {
            return Ok(Step::At(i + 1));
        }
        let step = match self.expect {
            Expect::Value | Expect::FirstValueOrEnd => self.value_start(b, i)?,
            Expect::FirstKeyOrEnd | Expect::Key => self.key_start(b, i)?,
            Expect::Colon => match b {
                b':' => {
                    self.expect = Expect::Value;
                    None
                }
                _ => return bad(b, i, "`:`"),
            },
            Expect::CommaOrEnd => self.comma_or_end(b, i)?,
        };
        Ok(step.unwrap_or(Step::At(i + 1)))
    }

    /// Byte `b` (at `i`) while a number or literal is being read: its next
    /// byte (`Some`), or its end, checked (`None` when the value goes on and
    /// `b` is still to be read).
    fn scalar_byte(&mut self, b: u8, i: usize) -> Result<Option<Step>, (usize, String)> {
        if !matches!(b, b',' | b']' | b'}') && !is_ws(b) {
            if self.scalar.len() >= MAX_SCALAR {
                return Err((i, format!("a number or literal over {MAX_SCALAR} bytes")));
            }
            self.scalar.push(b);
            return Ok(Some(Step::At(i + 1)));
        }
        let ok = serde_json::from_slice::<serde::de::IgnoredAny>(&self.scalar).is_ok();
        if !ok {
            let shown = super::super::message::clip(&self.scalar);
            return Err((i, format!("`{shown}` is not a JSON value")));
        }
        self.scalar.clear();
        Ok(self.end_value().then_some(Step::Done(i)))
    }

    /// Where a value may start (or, after `[`, the array end). `Some` when
    /// the outermost value ended with `b`.
    fn value_start(&mut self, b: u8, i: usize) -> Result<Option<Step>, (usize, String)> {
        match b {
            b']' if self.expect == Expect::FirstValueOrEnd => return Ok(self.close(i)),
            b'{' | b'[' => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err((i, format!("nesting deeper than {MAX_DEPTH}")));
                }
                self.stack.push(b);
                self.expect = if b == b'{' {
                    Expect::FirstKeyOrEnd
                } else {
                    Expect::FirstValueOrEnd
                };
            }
            b'"' => {
                self.string = Str::In;
                self.key = false;
            }
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => self.scalar.push(b),
            _ => bad(b, i, "a value").map(drop)?,
        }
        Ok(None)
    }

    /// Where a key may start (or, after `{`, the object end).
    fn key_start(&mut self, b: u8, i: usize) -> Result<Option<Step>, (usize, String)> {
        match b {
            b'}' if self.expect == Expect::FirstKeyOrEnd => Ok(self.close(i)),
            b'"' => {
                self.string = Str::In;
                self.key = true;
                Ok(None)
            }
            _ => bad(b, i, "a key").map(|_| None),
        }
    }

    /// After a value inside a container: `,` or its end.
    fn comma_or_end(&mut self, b: u8, i: usize) -> Result<Option<Step>, (usize, String)> {
        match (b, self.stack.last()) {
            (b',', Some(b'{')) => self.expect = Expect::Key,
            (b',', Some(_)) => self.expect = Expect::Value,
            (b']', Some(b'[')) | (b'}', Some(b'{')) => return Ok(self.close(i)),
            _ => bad(b, i, "`,` or the end of the container").map(drop)?,
        }
        Ok(None)
    }

    /// The container closed by the byte at `i` ended: `Some` when it was
    /// the outermost value.
    fn close(&mut self, i: usize) -> Option<Step> {
        self.stack.pop();
        self.end_value().then_some(Step::Done(i + 1))
    }

    /// A value ended: true when it was the outermost one.
    fn end_value(&mut self) -> bool {
        self.key = false;
        self.expect = Expect::CommaOrEnd;
        self.stack.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `n` bytes; the end offset or the error.
    fn check(text: &str, n: usize) -> Result<Option<usize>, usize> {
        let mut v = Validator::default();
        let b = text.as_bytes();
        let mut at = 0;
        for piece in b.chunks(n) {
            match v.feed(piece) {
                Ok(Some(k)) => return Ok(Some(at + k)),
                Ok(None) => at += piece.len(),
                Err((k, _)) => return Err(at + k),
            }
        }
        Ok(None)
    }

    #[test]
    fn valid_values_end_where_they_end_in_any_pieces() {
        for doc in [
            r#"{}"#,
            r#"[]"#,
            r#"{"a": [1, -2.5e3, true, false, null, "x\"\\\u00e9"], "b": {"c": {}}}"#,
            r#"[[[]], {"k": "v"}, 0]"#,
        ] {
            for n in 1..=doc.len() {
                assert_eq!(
                    check(&format!("{doc} , rest"), n),
                    Ok(Some(doc.len())),
                    "{doc} / {n}"
                );
            }
        }
    }

    #[test]
    fn invalid_values_are_errors_in_any_pieces() {
        for doc in [
            r#"[1 2]"#,
            r#"{"a" 1}"#,
            r#"{"a": tru}"#,
            r#"[1,]"#,
            r#"{,}"#,
            r#"["\x"]"#,
            r#"["\u12g4"]"#,
            "[\"a\u{1}\"]",
            r#"{"a": 1]"#,
            r#"[01]"#,
            r#"{1: 2}"#,
        ] {
            for n in 1..=doc.len() {
                assert!(check(doc, n).is_err(), "{doc} / {n}");
            }
        }
        // Cut short: not ended, not an error (the scanner reports the cut).
        assert_eq!(check(r#"{"a": [1"#, 3), Ok(None));
    }
}
