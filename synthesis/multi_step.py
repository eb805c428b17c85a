"""Multi-step tasks from coherent paths of the SCALE-Hop graph: a URL-addressable start, a goal state, the action
sequence with the observation before each action, and a reasoning per step."""

from __future__ import annotations

from collections import Counter
from urllib.parse import urljoin

import networkx as nx

from explorer.dedup import normalize_url
from explorer.records import Action, Edge, Element, Observation
from explorer.rows import RecordRow
from synthesis.recipe import DatasetRecipe
from synthesis.records import Lineage, MultiStepTask, PathStep
from synthesis.source import RunSource, task_id
from synthesis.templates import page_name, path_instruction, step_reasoning


def build_multi_step(source: RunSource, recipe: DatasetRecipe, skipped: Counter | None = None) -> list[MultiStepTask]:
    """One task per (start, goal) pair joined by a shortest path of `min_path`..`max_path` actions.

    Starts are the run's start page and every node not known to be unreachable by URL (`addressable` is not
    False); replay validation later checks that each start really loads from its URL. A path is shortest in the
    explored graph, not always on the site: one with a detour (a link shown on a step leads straight to a page
    further along) is left out and counted in `skipped`, since its steps would teach the Actor to walk past the
    link it needs.
    """
    skipped = Counter() if skipped is None else skipped
    graph = source.graph
    outcomes = _outcomes(source.records())
    starts = [n for n in graph.nodes() if n.addressable is not False or n.id == source.start_node]
    tasks = []
    for start in starts:
        hops = nx.single_source_shortest_path_length(graph.g, start.id, cutoff=recipe.max_path)
        for goal_id, n in hops.items():
            if n < recipe.min_path:
                continue
            path = graph.action_path(start.id, goal_id)
            task = _task(source, path, outcomes, skipped) if path else None
            if task is not None:
                tasks.append(task)
            if recipe.limit and len(tasks) >= recipe.limit:
                return tasks
    return tasks


def _outcomes(rows: list[RecordRow]) -> dict[tuple[str, str, str | None], str]:
    """Transition descriptions by (node_from, node_to, element_key), from the run's records."""
    return {(r.record.node_from, r.record.node_to, r.record.action.element_key): r.record.transition.description
            for r in rows}  # fmt: skip


def detour(path: list[Edge], observations: list[Observation], graph) -> int | None:
    """The first step whose page shows a link straight to a page reached two or more actions later (by
    navigation, so that its URL names that state), or None: the path is as short as its pages allow."""
    later = {
        j: normalize_url(graph.node(e.dst).raw_url)
        for j, e in enumerate(path)
        if graph.node(e.src).url != graph.node(e.dst).url
    }
    for i, obs in enumerate(observations):
        links = {normalize_url(urljoin(obs.url, el.href)) for el in obs.elements if el.href}
        if any(url in links for j, url in later.items() if j > i):
            return i
    return None


def _task(source: RunSource, path: list[Edge], outcomes: dict, skipped: Counter) -> MultiStepTask | None:
    graph = source.graph
    goal = graph.node(path[-1].dst)
    goal_obs = source.node_observation(goal)
    observations = [source.node_observation(graph.node(e.src)) for e in path]
    if goal_obs is None or any(o is None for o in observations):
        return None  # a run older than full observations: no per-step screenshots to show
    if detour(path, observations, graph) is not None:
        skipped["multi_step: a shown link skips part of the path"] += 1
        return None
    goal_name = page_name(goal_obs, goal.title)
    actions: list[tuple[Action, Element | None]] = []
    steps = []
    for edge, obs in zip(path, observations, strict=True):
        node, nxt = graph.node(edge.src), graph.node(edge.dst)
        element = next((e for e in obs.elements if e.key == edge.action.element_key), None)
        action = edge.action.model_copy(update={"mark": element.mark}) if element else edge.action
        outcome = outcomes.get((edge.src, edge.dst, edge.action.element_key)) or (
            f'it leads to "{page_name(source.node_observation(nxt), nxt.title)}".'
        )
        actions.append((action, element))
        steps.append(
            PathStep(
                node_id=node.id,
                url=node.raw_url,
                title=node.title,
                observation_text=obs.text,
                page_texts=obs.texts[:6],
                screenshot=node.screenshot,
                action=action,
                action_text=action.describe(),
                outcome=outcome,
                reasoning=step_reasoning(page_name(obs, node.title), action, element, outcome, goal=goal_name),
            )
        )
    navigates = [graph.node(e.src).url != graph.node(e.dst).url for e in path]
    model_id, adapter_id = source.explorer_model
    start = graph.node(path[0].src)
    return MultiStepTask(
        id=task_id(source.run_id, "multi_step", start.id, goal.id),
        site=source.site_name,
        lineage=Lineage(
            run_id=source.run_id,
            node_ids=[path[0].src, *[e.dst for e in path]],
            model_id=model_id,
            adapter_id=adapter_id,
            round=source.round,
        ),
        start_url=start.raw_url,
        goal_url=goal.raw_url,
        goal_title=goal.title,
        goal_screenshot=goal.screenshot,
        instruction=path_instruction(goal_name, actions, navigates),
        steps=steps,
    )
