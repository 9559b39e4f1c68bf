"""Issue 17: clear errors of the Python API (docs/ROBUSTNESS.md, "Round 2")."""

from pathlib import Path

import pytest

import torchtrace


@pytest.mark.parametrize(
    "records, what",
    [
        ({"header": {}, "files": []}, "one record set"),
        ("s1.jsonl", "one path"),
        (b"s1.jsonl", "one path"),
        (Path("s1.jsonl"), "one path"),
    ],
)
def test_merge_refuses_one_record_set_or_one_path(tmp_path, records, what):
    with pytest.raises(TypeError, match=what):
        torchtrace.merge(records, tmp_path / "out")
    assert not (tmp_path / "out").exists()
