//! Serde plumbing for per-trace records (`batch --records`, `merge`, the
//! Python package): the results of an analysis must survive a trip
//! through JSON exactly, including the internal figures the public JSON
//! leaves out (per-context rows, exact sums and medians) that comparisons,
//! pooling and figures are computed from at merge time.
//!
//! Internal fields are marked
//! `#[serde(default, skip_serializing_if = "crate::record::public")]`:
//! they are left out of every output document (`pair -f json`,
//! `results.json`), and written only inside [`with_internals`], which the
//! record writer uses. Floats survive the trip because serde_json is built
//! with `float_roundtrip` (shortest text out, correctly rounded in).

use serde::{Deserialize, Deserializer, Serializer};
use std::cell::Cell;
use std::path::{Path, PathBuf};

thread_local! {
    static INTERNALS: Cell<bool> = const { Cell::new(false) };
}

/// `skip_serializing_if` of internal fields: true (skip) unless the
/// current thread is writing a record.
pub fn public<T: ?Sized>(_: &T) -> bool {
    !INTERNALS.with(Cell::get)
}

/// Runs `f` with internal fields serialized (on this thread).
pub fn with_internals<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            INTERNALS.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(INTERNALS.with(|c| c.replace(true)));
    f()
}

/// A path as JSON: its text when it is UTF-8, else (Unix) its bytes, so
/// that a worker can open exactly the file the planner listed.
pub mod path {
    use super::*;

    #[derive(serde::Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
        use serde::Serialize;
        match p.to_str() {
            Some(t) => Repr::Text(t.to_string()).serialize(s),
            None => Repr::Bytes(bytes(p)).serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Text(t) => PathBuf::from(t),
            Repr::Bytes(b) => from_bytes(b).map_err(serde::de::Error::custom)?,
        })
    }

    #[cfg(unix)]
    fn bytes(p: &Path) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        p.as_os_str().as_bytes().to_vec()
    }

    #[cfg(not(unix))]
    fn bytes(p: &Path) -> Vec<u8> {
        p.to_string_lossy().into_owned().into_bytes()
    }

    #[cfg(unix)]
    fn from_bytes(b: Vec<u8>) -> Result<PathBuf, String> {
        use std::os::unix::ffi::OsStringExt;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(b)))
    }

    #[cfg(not(unix))]
    fn from_bytes(b: Vec<u8>) -> Result<PathBuf, String> {
        String::from_utf8(b)
            .map(PathBuf::from)
            .map_err(|_| "a path that is not UTF-8".to_string())
    }
}

/// [`path`] for `Option<PathBuf>`.
pub mod opt_path {
    use super::*;

    pub fn serialize<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        match p {
            Some(p) => super::path::serialize(p, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
        #[derive(Deserialize)]
        struct Wrap(#[serde(with = "super::path")] PathBuf);
        Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
    }
}

/// `value`'s compact JSON text, made in a buffer of its exact size taken
/// fallibly (a trace of 400 k steps: 200 MB of `idle` rows, whose
/// doubling buffer aborted a campaign under `prlimit --as`). `Err(Some(n))`:
/// the n bytes could not be had; `Err(None)`: it does not serialize.
pub fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, Option<u64>> {
    /// Counts the bytes written.
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_err(|_| None)?;
    let mut buf: Vec<u8> = Vec::new();
    let n = usize::try_from(count.0).map_err(|_| Some(count.0))?;
    buf.try_reserve_exact(n).map_err(|_| Some(count.0))?;
    serde_json::to_writer(&mut buf, value).map_err(|_| None)?;
    String::from_utf8(buf).map_err(|_| None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct T {
        shown: u32,
        #[serde(default, skip_serializing_if = "public")]
        internal: Vec<i128>,
        #[serde(with = "path")]
        p: PathBuf,
    }

    #[test]
    fn internals_only_inside_with_internals() {
        let t = T {
            shown: 1,
            internal: vec![i128::MAX],
            p: PathBuf::from("a/b"),
        };
        let public = serde_json::to_string(&t).unwrap();
        assert_eq!(public, r#"{"shown":1,"p":"a/b"}"#);
        let full = with_internals(|| serde_json::to_string(&t).unwrap());
        assert!(full.contains("170141183460469231731687303715884105727"));
        assert_eq!(serde_json::from_str::<T>(&full).unwrap(), t);
        // Outside again: public form.
        assert_eq!(serde_json::to_string(&t).unwrap(), public);
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_paths_survive() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"dir/\xff.json"));
        let t = T {
            shown: 0,
            internal: vec![],
            p: p.to_path_buf(),
        };
        let s = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<T>(&s).unwrap().p, p);
    }

    #[test]
    fn floats_survive_exactly() {
        for x in [0.1f64, 1.0 / 3.0, 5106297913.32079, 1e-300, f64::MAX] {
            let s = serde_json::to_string(&x).unwrap();
            assert_eq!(
                serde_json::from_str::<f64>(&s).unwrap().to_bits(),
                x.to_bits()
            );
        }
    }
}
