"""Multi-step tasks from coherent paths of the SCALE-Hop graph: a URL-addressable start, a goal state, the action
sequence with the observation before each action, and a reasoning per step."""

from __future__ import annotations

from collections import Counter
from urllib.parse import urljoin

import networkx as nx

from explorer.dedup import normalize_url
from explorer.records import Action, Edge, Element, Observation
from explorer.roles.actor import SHOWN_TEXTS
from explorer.rows import RecordRow
from synthesis.recipe import DatasetRecipe
from synthesis.records import Lineage, MultiStepTask, PathStep
from synthesis.source import RunSource, task_id
from synthesis.templates import page_facts, page_name, path_instruction, step_reasoning


def build_multi_step(source: RunSource, recipe: DatasetRecipe, skipped: Counter | None = None) -> list[MultiStepTask]:
    """One task per (start, goal) pair joined by a shortest path of `min_path`..`max_path` actions.

    Starts are the run's start page and every node not known to be unreachable by URL (`addressable` is not
    False); replay validation later checks that each start really loads from its URL. A path is shortest in the
    explored graph, not always on the site: where a link shown on a step leads straight to a page further along,
    the path takes that link (`shortcut`), since its detour would teach the Actor to walk past the link it needs;
    a path that becomes shorter than `min_path` is left out and counted in `skipped`.
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
            task = _task(source, path, outcomes, recipe.min_path, skipped) if path else None
            if task is not None:
                tasks.append(task)
            if recipe.limit and len(tasks) >= recipe.limit:
                return tasks
    return tasks


def _outcomes(rows: list[RecordRow]) -> dict[tuple[str, str, str | None], str]:
    """Transition descriptions by (node_from, node_to, element_key), from the run's records."""
    return {(r.record.node_from, r.record.node_to, r.record.action.element_key): r.record.transition.description
            for r in rows}  # fmt: skip


def shortcut(path: list[Edge], observations: list[Observation], graph) -> list[Edge]:
    """`path` with each detour replaced by the link that skips it: where a step's page shows a link to a page the
    path reaches two or more actions later (by navigation, so that its URL names the state), click that link
    (the farthest such page). The new edge is inferred from the link's href (verdict None); replay validation of
    the task checks it in the browser. `observations[i]` is the page before `path[i]`."""
    later = {
        j: normalize_url(graph.node(e.dst).raw_url)
        for j, e in enumerate(path)
        if graph.node(e.src).url != graph.node(e.dst).url and graph.node(e.dst).addressable is not False
    }
    out, i = [], 0
    while i < len(path):
        links = {normalize_url(urljoin(observations[i].url, el.href)): el for el in observations[i].elements if el.href}
        j = max((j for j, url in later.items() if j > i and url in links), default=None)
        if j is None:
            out.append(path[i])
            i += 1
            continue
        element = links[later[j]]
        out.append(Edge(src=path[i].src, dst=path[j].dst, action=Action.on(element, "click")))
        i = j + 1
    return out


def _task(source: RunSource, path: list[Edge], outcomes: dict, min_path: int, skipped: Counter) -> MultiStepTask | None:
    graph = source.graph
    goal = graph.node(path[-1].dst)
    goal_obs = source.node_observation(goal)
    observations = [source.node_observation(graph.node(e.src)) for e in path]
    if goal_obs is None or any(o is None for o in observations):
        return None  # a run older than full observations: no per-step screenshots to show
    short = shortcut(path, observations, graph)
    if len(short) < len(path):
        if len(short) < min_path:
            skipped["multi_step: shorter than min_path once a shown link replaces a detour"] += 1
            return None
        path = short
        observations = [source.node_observation(graph.node(e.src)) for e in path]
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
                page_texts=obs.texts[:SHOWN_TEXTS],
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
        goal_observation_text=goal_obs.text,
        goal_page_texts=goal_obs.texts[:SHOWN_TEXTS],
        goal_facts=page_facts(goal_name, goal_obs),
    )
