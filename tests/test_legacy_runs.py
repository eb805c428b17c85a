"""Run folders written before the step and record kinds were renamed still load, under today's names."""

from __future__ import annotations

from explorer.records import Action
from explorer.rows import RunMeta
from explorer.store import RunStore, resume


def old_run(runs_dir) -> RunStore:
    """A store as an older scalehop wrote it: kind "explore" for failure records and for picked steps, and only
    the strategy in its meta."""
    store = RunStore.create(runs_dir, "old", {"strategy": "random"})
    goto = Action(kind="goto", url="http://a.test/")
    click = Action(kind="click", mark=1, element_key="k1", label='link "Next"')
    with store.step(0) as tx:
        tx.action(None, "n0", goto.model_dump(mode="json"), {"kind": "start", "ok": True})
    with store.step(1) as tx:
        tx.action("n0", "n1", click.model_dump(mode="json"), {"kind": "explore", "ok": True})
        tx.record("explore", {"x": 1}, "n0", "n1")
        tx.record("understood", {"x": 2}, "n0", "n1")
    with store.step(2) as tx:
        tx.action("n1", "n0", goto.model_dump(mode="json"), {"kind": "explore", "ok": True})
    return store


def test_old_kind_names_read_as_the_new_ones(tmp_path):
    old_run(tmp_path).close()
    store, _ = resume(tmp_path / "old")
    try:
        assert [(s.step, s.kind) for s in store.steps()] == [(0, "start"), (1, "select"), (2, "goto")]
        assert all(s.outcome == {"ok": True} for s in store.steps())  # the kind is the row's, not the outcome's
        assert [(r.id, r.kind) for r in store.records()] == [("1-0", "failure"), ("1-1", "understood")]
        assert [r.payload for r in store.records("failure")] == [{"x": 1}]
        assert store.count_records("failure") == 1 and store.count_records("understood") == 1
        assert store.meta().strategy == "random" and store.meta().explore is None
    finally:
        store.close()


def test_meta_is_typed_with_defaults_for_what_a_run_never_wrote(tmp_path):
    store = RunStore.create(tmp_path, "bare")
    try:
        meta = store.meta()
        assert isinstance(meta, RunMeta) and meta.run_id == "bare" and meta.created > 0
        assert (meta.site, meta.strategy, meta.tokens, meta.seconds, meta.timings) == (None, None, 0, 0.0, {})
        store.set_meta("tokens", 7)
        store.set_meta("note", "kept")  # a key this version does not know stays readable
        assert store.meta().tokens == 7 and store.meta().model_extra == {"note": "kept"}
        assert store.explore_config().strategy == "scale" and store.usage() == {} and store.events() == []
    finally:
        store.close()
