"""Page QA: question/answer pairs about each state's content, grounded in its observation and its transitions."""

from __future__ import annotations

from explorer.records import Node, Observation
from explorer.roles.actor import SHOWN_TEXTS
from explorer.rows import RecordRow
from synthesis.recipe import DatasetRecipe
from synthesis.records import Lineage, PageQA
from synthesis.source import RunSource, task_id
from synthesis.templates import has_effect, outcome_question, page_facts, page_name, page_questions

MAX_OUTCOMES_PER_NODE = 3


def build_page_qa(source: RunSource, recipe: DatasetRecipe) -> list[PageQA]:
    """For every node: title, heading, sections, form-field and fact questions (`templates.page_facts`), plus
    "what happens when ..." questions answered by the true transitions of actions tried there."""
    by_node: dict[str, list[RecordRow]] = {}
    for row in source.records():
        if has_effect(row.record.transition) and row.record.observation:
            by_node.setdefault(row.record.node_from, []).append(row)
    tasks = []
    for node in source.graph.nodes():
        obs = source.node_observation(node)
        if obs is None:
            continue
        tasks += [_qa(source, node, obs, kind, q, a) for kind, q, a in page_questions(obs)]
        tasks += [_qa(source, node, obs, "fact", q, a) for q, a in page_facts(page_name(obs, node.title), obs)]
        for row in by_node.get(node.id, [])[:MAX_OUTCOMES_PER_NODE]:
            rec = row.record
            asked = source.observation(rec.observation)
            element = asked.element(rec.action.mark) if rec.action.mark is not None else None
            question = outcome_question(rec.action, element)
            tasks.append(_qa(source, node, obs, "outcome", question, rec.transition.description, row))
        if recipe.limit and len(tasks) >= recipe.limit:
            return tasks[: recipe.limit]
    return tasks


def _qa(
    source: RunSource, node: Node, obs: Observation, kind: str, question: str, answer: str, row: RecordRow | None = None
) -> PageQA:
    model_id, adapter_id = source.explorer_model
    return PageQA(
        id=task_id(source.run_id, "page_qa", node.id, kind, question),
        site=source.site_name,
        lineage=Lineage(
            run_id=source.run_id,
            node_ids=[node.id],
            record_id=row.id if row else "",
            step=row.step if row else -1,
            model_id=model_id,
            adapter_id=adapter_id,
            round=source.round,
        ),
        url=node.raw_url,
        title=node.title,
        qa_kind=kind,
        question=question,
        answer=answer,
        observation_text=obs.text,
        page_texts=obs.texts[:SHOWN_TEXTS],
        screenshot=node.screenshot,
    )
