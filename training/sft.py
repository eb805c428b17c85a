"""SFT views of failure samples (j=0 records only, as in SCALE), in the exact prompt format the roles use.

- Selector: O_i -> a_i + r_sel. The prompt is `selector_messages` (page summary, what was tried at the node
  before this step, candidates); the answer continues the prefill `MARK:` with ` <mark>\\nREASON: <r_sel>`.
  The run does not store the Selector's candidate list, so it is rebuilt: the usable elements untried at that
  moment, up to 7 of them drawn (seeded by the record) around the element really picked, in seeded order.
- Predictor: (O_i, a_i, r_sel) -> t_i + r_t. The prompt is `predictor_messages`; the answer continues the
  prefill `OUTCOME:` with ` <transition description>\\nREASON: <outcome reasoning>`, which `parse_prediction`
  reads back and the rule Judger accepts against the same transition (see tests/test_training.py).
The Judger is never trained.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass

from explorer.candidates import usable_elements
from explorer.models import Message
from explorer.models.grammar import REASON_CHARS
from explorer.roles import predictor_messages, selector_messages
from explorer.roles.context import element_line
from explorer.roles.predictor import PREFILL as PREDICTOR_PREFILL
from explorer.roles.selector import MAX_CANDIDATES
from explorer.roles.selector import PREFILL as PICK_PREFILL
from training.samples import Sample

ROLES = ("selector", "predictor")


@dataclass(frozen=True)
class SFTExample:
    """One supervised example: the role's prompt, the prefill the answer starts with, and the target after it."""

    role: str  # "selector" or "predictor"
    messages: list[Message]  # system + user, exactly as the role builds them
    prefill: str  # the answer's start, given at inference ("MARK:", "OUTCOME:")
    completion: str  # what the model must write after the prefill (loss is on these tokens only)
    source: str  # "<run folder>#<record id>"

    @property
    def answer(self) -> str:
        """The whole answer text, as the role parses it."""
        return self.prefill + self.completion


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _reason(text: str) -> str:
    """A reason as the roles' grammar lets a model write it: one line of at most REASON_CHARS characters."""
    return _one_line(text)[:REASON_CHARS].rstrip() or "-"


def selector_example(sample: Sample) -> SFTExample | None:
    """O_i -> a_i + r_sel for a Selector pick (None for verification actions or a lost target)."""
    target = sample.target
    if not sample.selected or target is None:
        return None
    obs = sample.observation
    untried = [e for e in usable_elements(obs, sample.site) if e.key not in sample.tried_keys and e.key != target.key]
    rng = random.Random(sample.id)
    shown = [*rng.sample(untried, min(MAX_CANDIDATES - 1, len(untried))), target]
    rng.shuffle(shown)
    tried_names = [e.name for e in obs.elements if e.key in sample.tried_keys]
    reason = sample.selector_reasoning
    if not reason or reason.startswith("fallback"):
        reason = f"unsure what {element_line(target)} does"
    return SFTExample(
        role="selector",
        messages=selector_messages(obs, shown, tried_names),
        prefill=PICK_PREFILL,
        completion=f" {target.mark}\nREASON: {_reason(reason)}",
        source=sample.id,
    )


def predictor_example(sample: Sample) -> SFTExample:
    """(O_i, a_i, r_sel) -> t_i + r_t: the true outcome in the Predictor's own answer format."""
    return SFTExample(
        role="predictor",
        messages=predictor_messages(
            sample.observation, sample.action, sample.target, sample.selector_reasoning, sample.hint
        ),
        prefill=PREDICTOR_PREFILL,
        completion=f" {_one_line(sample.transition.description)}\nREASON: {_reason(sample.outcome_reasoning)}",
        source=sample.id,
    )


def sft_examples(samples: list[Sample], tasks: tuple[str, ...] = ROLES) -> list[SFTExample]:
    """The SFT views of the failure samples (kind "failure") among `samples`, for the roles in `tasks`."""
    unknown = set(tasks) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown roles {sorted(unknown)}: train 'selector' and/or 'predictor'")
    out: list[SFTExample] = []
    for sample in samples:
        if sample.kind != "failure":
            continue
        if "selector" in tasks and (example := selector_example(sample)) is not None:
            out.append(example)
        if "predictor" in tasks:
            out.append(predictor_example(sample))
    return out


def data_hash(examples: list[SFTExample]) -> str:
    """sha256 over the examples' roles, prompts and targets: the identity of a training set."""
    digest = hashlib.sha256()
    for ex in examples:
        digest.update(json.dumps([ex.role, ex.messages, ex.prefill, ex.completion]).encode())
    return digest.hexdigest()
