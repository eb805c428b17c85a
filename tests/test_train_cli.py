"""`scalehop train DATASET...`: a real LoRA on the embedded model, trained by TRL's SFTTrainer on the Actor and
page-QA views of a dataset folder, through the command line (YAML config under the flags).

The dataset is the fast tier's tiny hand-written one (`tests/fast/test_shots.py`: rows in the schema that
`scalehop dataset build` writes); the model, the training and the adapter are real.
"""

from __future__ import annotations

import json

from explorer.models import ModelConfig, load_model
from explorer.roles.prompts import prefill
from flows.cli import main as scalehop
from tests.fast.test_shots import write_dataset
from training.adapters import read_card
from training.views import dataset_examples


def test_scalehop_train_writes_an_adapter_that_changes_the_actor(tmp_path, capsys):
    folder = write_dataset(tmp_path / "dataset")
    config = tmp_path / "train.yaml"
    config.write_text("views: [actor]\nlr: 0.003\nbatch_size: 2\nmax_steps: 99\n")
    out = tmp_path / "adapter"
    argv = ["train", str(folder), "--config", str(config), "--views", "actor,qa", "--max-steps", "3", "--out", str(out)]
    assert scalehop([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["views"] == {"actor": 6, "qa": 1}  # --views over the file's
    assert summary["train"]["steps"] == 3  # --max-steps over the file's 99
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    card = read_card(out)
    assert card.counts["actor_examples"] == 6 and card.counts["train_examples"] == 7
    assert len(card.metrics["train"]["losses"]) == 3  # one logged loss per step (its fall: tests/test_training.py)

    model = load_model(ModelConfig())
    example = dataset_examples([folder], ("actor",))[0]
    prompt = [*example.messages, prefill(example.prefill)]
    base = model.generate(prompt, max_tokens=12, use_adapter=False).text
    name = model.load_adapter(out, activate=False)
    tuned = model.generate(prompt, max_tokens=12, adapter=name).text
    assert tuned != base  # the adapter changes what the Actor writes


def test_scalehop_train_without_examples_names_the_folder(tmp_path, capsys):
    folder = write_dataset(tmp_path / "dataset", qa_rows=[])
    assert scalehop(["train", str(folder), "--views", "qa", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and "scalehop dataset build" in err
