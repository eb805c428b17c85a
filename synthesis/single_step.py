"""Single-step tasks from valid exploratory actions: instruction, observation, target element/action, reasoning."""

from __future__ import annotations

from collections import Counter

from explorer.roles.actor import SHOWN_TEXTS
from synthesis.recipe import DatasetRecipe
from synthesis.records import Lineage, SingleStepTask, TargetElement
from synthesis.source import RunSource, task_id
from synthesis.templates import (
    has_effect,
    page_facts,
    page_name,
    short_title,
    single_step_instruction,
    step_reasoning,
)


def build_single_step(source: RunSource, recipe: DatasetRecipe, skipped: Counter) -> list[SingleStepTask]:
    """One task per failure record (and understood record, if the recipe says so) whose action had an effect.

    Records left out are counted in `skipped` by reason.
    """
    kinds = ("failure", "understood") if recipe.include_understood else ("failure",)
    tasks = []
    for row in source.records(kinds):
        rec = row.record
        if rec.observation is None:
            skipped["single_step: record without a full observation"] += 1
            continue
        if not has_effect(rec.transition):
            skipped["single_step: action failed or changed nothing"] += 1
            continue
        obs = source.observation(rec.observation)
        element = obs.element(rec.action.mark) if rec.action.mark is not None else None
        after = source.node_observation(source.graph.node(rec.node_to)) if rec.node_to in source.graph.g else None
        target = None
        if element is not None:
            target = TargetElement(mark=element.mark, role=element.role, name=element.name, tag=element.tag,
                                   bbox=element.bbox)  # fmt: skip
        tasks.append(
            SingleStepTask(
                id=task_id(source.run_id, "single_step", row.id),
                site=source.site_name,
                lineage=Lineage(
                    run_id=source.run_id,
                    node_ids=[rec.node_from, rec.node_to],
                    record_id=row.id,
                    step=row.step,
                    model_id=rec.model_id,
                    adapter_id=rec.adapter_id or "",
                    round=rec.round,
                ),
                url=obs.url,
                title=obs.title,
                instruction=single_step_instruction(rec.action, element, rec.transition, after),
                observation_text=obs.text,
                page_texts=obs.texts[:SHOWN_TEXTS],
                screenshot=rec.screenshot,
                som_screenshot=rec.som_screenshot,
                action=rec.action,
                action_text=rec.action.describe(),
                target=target,
                outcome=rec.transition.description,
                reasoning=step_reasoning(
                    page_name(obs, short_title(obs.title)), rec.action, element, rec.transition.description
                ),  # fmt: skip
                goal_observation_text=after.text if after is not None else "",
                goal_page_texts=after.texts[:SHOWN_TEXTS] if after is not None else [],
                goal_facts=page_facts(page_name(after, after.title), after) if after is not None else [],
            )
        )
        if recipe.limit and len(tasks) >= recipe.limit:
            break
    return tasks
