//! Tests of map and merge: shard assignment, the records' round trip, merge's checks.

use super::lines::*;
use super::*;

fn unit(bytes: u64, label: &str) -> (usize, Unit) {
    (
        0,
        Unit {
            plan: Plan::Elsewhere,
            bytes,
            label: label.into(),
        },
    )
}

#[test]
fn shards_parse() {
    assert_eq!(
        "2/8".parse::<Shard>().unwrap(),
        Shard { index: 2, count: 8 }
    );
    for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
        assert!(bad.parse::<Shard>().is_err(), "{bad}");
    }
}

/// Largest first, each to the least-loaded shard:
///
/// ```text
/// units, largest first:  e:9  a:5  b:5  c:3  d:1
/// shard 1  e        9
/// shard 2  a  c     8     a before b: equal bytes, by label
/// shard 3  b  d     6
/// ```
#[test]
fn assignment_balances_bytes_and_is_stable() {
    let units = vec![
        unit(5, "a"),
        unit(5, "b"),
        unit(3, "c"),
        unit(1, "d"),
        unit(9, "e"),
    ];
    // e→1 (9); a→2 (5); b→3 (5); c→2 (8); d→3 (6).
    assert_eq!(assign(&units, 3), vec![2, 3, 2, 3, 1]);
    assert_eq!(assign(&units, 1), vec![1; 5]);
    let mut rev = units.clone();
    rev.reverse();
    let mut back = assign(&rev, 3);
    back.reverse();
    assert_eq!(back, assign(&units, 3), "input order does not matter");
}

#[test]
fn records_need_a_header_and_count_their_rows() {
    let lines = |v: &[&str]| -> Vec<Result<String, RecordError>> {
        v.iter().map(|s| Ok(s.to_string())).collect()
    };
    let e = parse_lines("r.jsonl", lines(&[r#"{"end":{"files":0}}"#])).unwrap_err();
    assert!(e.to_string().contains("start with a header"), "{e}");
    let e = parse_lines("r.jsonl", lines(&["{not json"])).unwrap_err();
    assert!(e.to_string().contains("r.jsonl: line 1"), "{e}");
    let e = parse_lines("r.jsonl", lines(&[r#"{"header":{"schema":99}}"#])).unwrap_err();
    assert!(matches!(e, RecordError::Schema { found: 99, .. }), "{e}");
    let e = parse_lines("r.jsonl", lines(&[])).unwrap_err();
    assert!(e.to_string().contains("no header"), "{e}");
}

/// A records file cut anywhere, or with any line dropped, is an error
/// naming its line or an incomplete set: never a panic, never a set
/// that claims to be complete.
#[test]
fn cut_or_damaged_records_never_pass_as_complete() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let options = CampaignOptions::default();
    let opts = options.batch_options(true).unwrap();
    let header = plan_campaign(&[root.join("sample_traces/text_mtp")], options, None).unwrap();
    let files = map(&header, Shard::ALL, &opts);
    let mut text = Vec::new();
    write_records(&mut text, &header, &files).unwrap();
    let text = String::from_utf8(text).unwrap();
    let parse = |t: &str| parse_lines("r", t.split('\n').map(|l| Ok(l.to_string())));
    assert!(parse(&text).unwrap().complete);
    let step = (text.len() / 397).max(1);
    for cut in (0..text.len()).step_by(step) {
        if !text.is_char_boundary(cut) {
            continue;
        }
        if let Ok(set) = parse(&text[..cut]) {
            assert!(!set.complete, "cut at {cut} of {}", text.len());
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    for drop in 1..lines.len() - 1 {
        let mut l = lines.clone();
        l.remove(drop);
        let e = parse(&l.join("\n")).unwrap_err();
        assert!(e.to_string().contains("the end line counts"), "{e}");
    }
}

/// Every figure survives the trip through JSON exactly (floats
/// included), on every kind of file of the sample campaign and on
/// real traces of other shapes.
#[test]
fn records_round_trip_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let paths = [root.join("sample_traces"), root.join("tests/data")];
    let options = CampaignOptions::default();
    let opts = options.batch_options(true).unwrap();
    let header = plan_campaign(&paths, options, None).unwrap();
    let files = map(&header, Shard::ALL, &opts);
    assert!(
        files
            .iter()
            .filter(|f| crate::registry::facts(&f.results).is_some())
            .count()
            >= 7
    );
    let mut text = Vec::new();
    write_records(&mut text, &header, &files).unwrap();
    let lines = text
        .split(|&b| b == b'\n')
        .map(|l| Ok(String::from_utf8(l.to_vec()).unwrap()));
    let back = parse_lines("mem", lines).unwrap();
    assert!(back.complete);
    assert_eq!(back.header, header);
    assert_eq!(back.files.len(), files.len());
    for (a, b) in back.files.iter().zip(&files) {
        assert_eq!(a, b, "{}", b.path);
    }
}
