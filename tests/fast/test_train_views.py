"""Training views of datasets (`training.views`) and the TrainConfig file in TRL's CLI style.

The Actor view must show the model, in training, exactly the prompt the live Actor builds at inference; these
tests check that on a page of the fast tier's hand-made shop, and that every answer reads back as its action.
The tiny dataset is the few-shot tests' one (`tests/fast/test_shots.py`), written with `datasets`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evals.shots import load_demonstrations
from explorer.errors import ConfigError
from explorer.observe import text_lines
from explorer.roles.actor import MAX_SHOWN, PREFILL, actor_messages, parse_action
from explorer.roles.shortlist import shortlist
from tests.fast.conftest import PAGES
from tests.fast.test_shots import shown_elements, write_dataset
from training.config import TrainConfig
from training.views import dataset_examples, demonstrated_action, demonstration_example, view_counts, weighted


def test_the_dataset_prompt_is_the_live_actors_prompt():
    """A dataset page (observation_text + page_texts) yields the very prompt the live Actor writes."""
    from evals.shots import demo_prompt

    obs = PAGES["home"]
    assert obs.texts, "the page must have text blocks, or the check misses them"
    history = ['click link "Jackets"', "back"]
    lines = text_lines(obs.url, obs.elements)
    shown = [obs.elements[i] for i in shortlist("Find boots", lines, MAX_SHOWN)]  # as `act` shows them
    live = actor_messages("Find boots", obs, shown, history)
    from_dataset = demo_prompt("Find boots", obs.text, history, None, obs.texts)
    assert from_dataset == live[-1]["content"]
    assert "Text: Free returns." in from_dataset


def test_actor_and_qa_views_read_back_as_their_actions(tmp_path):
    folder = write_dataset(tmp_path)
    examples = dataset_examples([folder], ("actor", "qa"))
    counts = view_counts(examples)
    # 3 writable single-step rows (one types a double quote: left out), 3 multi-step steps, 1 page-QA row
    assert counts == {"actor": 6, "qa": 1}
    for ex in examples:
        assert ex.prefill == PREFILL and ex.messages[0]["role"] == "system" and ex.messages[1]["role"] == "user"
        parsed = parse_action(ex.answer, shown_elements(ex.messages[1]["content"]))
        assert parsed is not None, ex.answer
    qa = next(ex for ex in examples if ex.role == "qa")
    assert qa.completion.startswith(' stop "$80"')
    assert dataset_examples([folder], ("qa",)) == [qa]


def test_demonstration_example_keeps_the_prompt_and_splits_the_answer(tmp_path):
    demo = load_demonstrations(write_dataset(tmp_path))[0]
    ex = demonstration_example(demo, "actor", "d#0")
    assert ex.messages[1]["content"] == demo.prompt and ex.answer == demo.answer
    assert ex.completion == demo.answer[len("ACTION:") :]


def test_view_weights_repeat_whole_and_seeded_share(tmp_path):
    examples = dataset_examples([write_dataset(tmp_path)], ("actor", "qa"))
    out = weighted(examples, {"actor": 2.5, "qa": 0.0}, seed=1)
    assert view_counts(out) == {"actor": 6 * 2 + 3}
    assert weighted(examples, {"actor": 2.5, "qa": 0.0}, seed=1) == out  # seeded


def test_unknown_view_and_empty_dataset_name_the_problem(tmp_path):
    folder = write_dataset(tmp_path)
    with pytest.raises(ConfigError, match="unknown; choose among actor, qa, selector, predictor"):
        dataset_examples([folder], ("judger",))
    with pytest.raises(ConfigError, match="no dataset there"):
        dataset_examples([tmp_path / "nothing"], ("actor",))


def test_train_config_yaml_under_flags_and_old_names(tmp_path):
    yaml_file = tmp_path / "train.yaml"
    yaml_file.write_text("lr: 0.0005\nepochs: 3\nviews: [actor, qa]\nweights: {qa: 0.5}\n")
    cfg = TrainConfig.load(yaml_file, epochs=1.0)  # the flag wins over the file, the file over the defaults
    assert (cfg.lr, cfg.epochs, cfg.views, cfg.weights, cfg.rank) == (5e-4, 1.0, ("actor", "qa"), {"qa": 0.5}, 16)
    old = tmp_path / "old.toml"
    old.write_text('tasks = ["predictor"]\n')  # configs written before views existed
    assert TrainConfig.load(old).views == ("predictor",)
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: [unclosed\n")
    with pytest.raises(ConfigError, match=f"{bad}: not valid YAML"):
        TrainConfig.load(bad)
    with pytest.raises(ConfigError, match="weights"):
        TrainConfig.load(None, weights={"actor": -1.0})


def test_shipped_train_configs_load():
    root = Path(__file__).resolve().parents[2]
    assert TrainConfig.load(root / "configs" / "train.toml").views == ("actor", "selector", "predictor")


def test_action_weights_repeat_the_actor_examples_of_one_action(tmp_path):
    """`action_weights` repeat Actor examples by the action they demonstrate (rare typing and answers as often as
    clicks), on top of the view weight; other actions keep weight 1."""
    examples = dataset_examples([write_dataset(tmp_path)], ("actor", "qa"))
    kinds = Counter(demonstrated_action(ex) for ex in examples)
    assert kinds == {"click": 4, "type": 1, "select": 1, "answer": 1}  # the qa row's `stop "$80"` is an answer
    out = weighted(examples, {"qa": 2.0}, seed=0, action_weights={"answer": 3.0, "type": 2.0})
    counts = Counter((ex.role, demonstrated_action(ex)) for ex in out)
    assert counts[("qa", "answer")] == 2 * 3 and counts[("actor", "type")] == 2 * kinds["type"]
    assert counts[("actor", "click")] == kinds["click"] and len(out) == 4 + 2 + 1 + 6
    halves = {"actor": 2.5, "qa": 0.5}  # a seeded share is drawn: the same one without action weights
    assert weighted(examples, halves, seed=0, action_weights={"click": 1.0}) == weighted(examples, halves, seed=0)


@pytest.mark.parametrize("bad", [{"type": -1.0}, {"answer": float("nan")}, {"typo": 2.0}])
def test_bad_action_weights_name_the_field(bad):
    with pytest.raises(ConfigError, match="action_weights"):
        TrainConfig.load(None, action_weights=bad)
