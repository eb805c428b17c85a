"""bench/chaos.py in small: SIGKILLs of a random-walk run at random moments, each resumed, lose nothing; and its
checker does flag a gap, a lost record and accounting that goes backwards. The 20-kill SCALE run is
`.venv/bin/python bench/chaos.py` (minutes)."""

from __future__ import annotations

from bench.chaos import Snapshot, chaos, problems


def test_random_sigkills_with_resumes_lose_nothing(tmp_path):
    rows, found = chaos(kills=3, strategy="random", site="shop", seed=1, runs=tmp_path, max_wait=120)
    assert found == []
    steps = [row[1] for row in rows]
    assert steps == sorted(steps) and steps[-1] == steps[-2] + 2  # the last resume ran its two steps
    seconds = [row[5] for row in rows]
    assert seconds == sorted(seconds) and seconds[0] > 0


def test_the_checker_flags_a_gap_a_lost_record_and_accounting_going_back(tmp_path):
    before = Snapshot(steps=[(0,), (1,)], records={"1-0": ("1-0",)}, nodes=2, tokens=10, seconds=5.0)
    fine = Snapshot(steps=[(0,), (1,), (2,)], records={"1-0": ("1-0",)}, nodes=3, tokens=12, seconds=6.0)
    assert problems(tmp_path, fine, before) == []
    broken = Snapshot(steps=[(0,), (2,)], records={}, nodes=2, tokens=9, seconds=6.0)
    found = " / ".join(problems(tmp_path, broken, before))
    assert "not contiguous" in found and "records lost" in found and "went backwards" in found
