"""The dataset folder's hf/ loads with the standard call even when a task type has no rows."""

from __future__ import annotations

from datasets import load_from_disk
from synthesis.export import to_dataset_dict, write_data


def test_a_dataset_with_empty_splits_loads_back(tmp_path):
    dd = to_dataset_dict([], {}, ["single_step", "multi_step", "page_qa"])
    write_data(dd, tmp_path)
    back = load_from_disk(str(tmp_path / "hf"))  # failed with IndexError on a split saved without a shard
    assert set(back) == {"single_step", "multi_step", "page_qa"}
    assert all(len(ds) == 0 for ds in back.values())
    assert back["single_step"].features == dd["single_step"].features
