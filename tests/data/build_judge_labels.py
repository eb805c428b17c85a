"""Build tests/data/judge_labels.json, the labelled Judger set, from real SCALE runs.

    .venv/bin/python tests/data/build_judge_labels.py RUN_DIR... [--handwritten FILE] [--out FILE]
    .venv/bin/python tests/data/build_judge_labels.py tests/data/judge_runs.json   # the kept runs, no run folders
    .venv/bin/python tests/data/build_judge_labels.py tests/data/judge_runs.json --record-adapter ADAPTER_DIR...

A RUN_DIR may also be a JSON file of runs kept by `explorer.audit.save_runs` (`judge_runs.json`, which every build
rewrites beside its output).

Per real transition of each run it writes:
- `model-base` / `model-adapter`: the run's own Predictor answer, labelled by a person. Labels are read from
  `tests/data/judge_labels_manual.tsv` (case id, label, note); answers not labelled yet are listed in
  `judge_labels_review.tsv` beside the output and left out.
- `model-adapter` also: a LoRA adapter's Predictor answers to the same real transitions, kept in
  `tests/data/judge_adapter_answers.json` (case id `<run>:<record>:model-adapter:<adapter>`) and labelled by a
  person in the same TSV. `--record-adapter` records them: each transition's page (`url_before`) is opened again
  on a fresh copy of its site (the bundled sites on their run's ports, Django's admin logged in), the acted
  element is found by its label, the action rebuilt (a typed or selected value read back from the transition,
  else `explorer.candidates`' words), and the adapter answers as the live Predictor does
  (`training.evaluate.predictor_predictions`, shown the engine's verification reasoning, no hint). Transitions
  whose element is not on the fresh page are left out.
- generated cases, labelled by how they are built (the rules in RULES): a paraphrase of the truth (right),
  a near miss (wrong: a sibling page, a parent path, a flipped direction, a control that did not change),
  a hedge (wrong), and adversarial answers (wrong: the site's name, someone else's outcome, "nothing changes").
- `handwritten`: cases of configs-style YAML written by a person for live transitions, whose recorded
  transitions are kept in `tests/data/handwritten_transitions.json`.

Splits are by page template: every case of one (site, page the action started on, with digits folded) lands
in the same split, half of the templates in each.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import re
import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[2])

from explorer.audit import Case, RunCases, load_run, load_runs, save_runs, signature, site_title  # noqa: E402
from explorer.labels import LabelledCase, LabelledSet, Source  # noqa: E402
from explorer.pages import title_parts, url_path  # noqa: E402
from explorer.roles.judger import true_kinds  # noqa: E402

HERE = Path(__file__).resolve().parent
ADAPTER_ANSWERS = HERE / "judge_adapter_answers.json"
RULES = """A prediction is right when every concrete claim it makes is true of this transition, and what it says
picks this outcome out from the site's other outcomes. In detail:
1. Navigation. It must say that a new page loads exactly when the URL changes. A path it gives must equal the real
   path on every segment (ids included); a parent path, a sibling's path or a prefix is wrong. A page name must name
   this page (its own title part, its title or its main heading, in any words) and not another page the run has
   seen; the site's name, or a part every title carries, names no page (it is right only for the page titled by
   the site's name alone). Naming several pages (A, B or C; either; maybe) is wrong.
2. In-page. What it says happens must happen in that direction: appears (opens, shows, expands) only for what
   appeared; disappears (closes, hides, goes away) only for what went; changes (becomes, toggles) only for what
   changed in place. Every control or text it quotes must be one that changed that way. At least one thing it
   says must name what changed; a vague right kind ("a menu opens", "something appears") is wrong. "Nothing
   changes" is right only when no control or text changed (pixels alone, such as a focus ring, are nothing).
3. Restating the action ("the Reply button") or hedging ("maybe", "either") is wrong. Wording does not matter.
Generated categories are labelled by construction under these rules; model answers were labelled by a person."""


def template(url: str) -> str:
    """A page template key: path with digits folded (`/p/17` -> `/p/#`)."""
    return re.sub(r"\d+", "#", url_path(url).split("?")[0])


def split_of(source_site: str, url: str) -> str:
    """calibration or report, fixed per (site, template) by a hash."""
    digest = hashlib.sha256(f"{source_site}|{template(url)}".encode()).digest()
    return "report" if digest[0] % 2 else "calibration"


def own_name(title: str) -> str:
    """The first part of a title: the page's own name."""
    parts = title_parts(title)
    return parts[0] if parts else title


def generated(run: RunCases, case: Case, rng: random.Random) -> list[tuple[str, str, bool, str]]:
    """(category, prediction, label, note) built for one real transition."""
    t, out = case.transition, []
    others = [c for c in run.cases if c is not case and not signature(c.transition) <= signature(t)]
    same_kind = [c for c in others if c.transition.url_changed == t.url_changed]
    name = site_title(run.pages)
    if t.url_changed:
        own, path = own_name(t.title_after), url_path(t.url_after)
        if own.startswith("/"):  # a title that starts with a path ("/about/ -- About us | Change flat page")
            pass
        elif not run.pages.identity(t.title_after).title:
            if path.strip("/") == "":
                out.append(("paraphrase", "Goes back to the home page.", True, "home page in other words"))
        else:
            heading = (t.headings_after or [""])[0]
            twins = [c for c in same_kind if own_name(c.transition.title_after) == own]
            page_name = heading if twins and heading else own  # pages that share a title differ in their heading
            shown = f'"{page_name}"' if re.search(r"[.!?]", page_name) else page_name
            out.append(("paraphrase", f"Opens the {shown} page.", True, "the page's own name"))
            out.append(("paraphrase", f'Navigates to "{page_name}" ({path}).', True, "the page's own name and path"))
        segments = [s for s in path.split("?")[0].split("/") if s]
        if len(segments) >= 2:
            parent = "/" + "/".join(segments[:-1]) + "/"
            out.append(("near-miss", f'Navigates to "{t.title_after}" ({parent}).', False, "parent path"))
        siblings = [c for c in same_kind if own_name(c.transition.title_after) != own]
        if siblings:
            sib = rng.choice(siblings).transition
            out.append(("near-miss", f'Navigates to "{own_name(sib.title_after)}".', False, "another page's name"))
            if len(siblings) >= 2:
                alts = {own_name(c.transition.title_after) for c in rng.sample(siblings, min(3, len(siblings)))}
                alts = sorted(alts - {own})
                if alts:
                    listed = ", ".join([own, *alts[:-1]]) + f" or {alts[-1]}"
                    out.append(("hedge", f"Navigates to the {listed} page.", False, "names several pages"))
        if run.pages.identity(t.title_after).title:
            out.append(("adversarial", f'Navigates to "{name}".', False, "the site's name"))
    else:
        kinds = true_kinds(t)
        if kinds <= {"nothing", "fails"}:
            out.append(("paraphrase", "The page stays the same.", True, "nothing in other words"))
            if same_kind:
                other = rng.choice(same_kind).transition
                thing = (other.added or other.removed or [None])[0]
                if thing is not None and thing.name:
                    out.append(("near-miss", f'A {thing.role} "{thing.name}" appears.', False, "nothing changed"))
        else:
            both = {e.name for e in t.added} & {e.name for e in t.removed}  # re-rendered: appears and disappears
            named = [e for e in t.added if e.name and e.name != case.acted and e.name not in both]
            gone = [e for e in t.removed if e.name and e.name != case.acted and e.name not in both]
            if named:
                e = rng.choice(named)
                out.append(("paraphrase", f'A {e.role} "{e.name}" shows up.', True, "an added control"))
                out.append(("near-miss", f'The {e.role} "{e.name}" disappears.', False, "direction flipped"))
            elif gone:
                e = rng.choice(gone)
                out.append(("paraphrase", f'The {e.role} "{e.name}" goes away.', True, "a removed control"))
                out.append(("near-miss", f'A {e.role} "{e.name}" appears.', False, "direction flipped"))
            changed = [c for c in t.changed if c.field == "name" and c.after]
            if changed:
                c = rng.choice(changed)
                out.append(("paraphrase", f'The {c.role} label becomes "{c.after}".', True, "a renamed control"))
            if t.texts_added and not named:
                text = t.texts_added[0][:40].rstrip()
                out.append(("paraphrase", f'Text appears: "{text}".', True, "added text, quoted"))
            out.append(("adversarial", "Nothing visible changes.", False, "nothing, when something changed"))
            strangers = [
                e
                for c in same_kind
                for e in c.transition.added
                if e.name and e.name not in {x.name for x in [*t.added, *t.removed, *t.changed]}
            ]
            if strangers:
                e = rng.choice(strangers)
                out.append(("near-miss", f'A {e.role} "{e.name}" appears.', False, "a control that did not change"))
            out.append(("hedge", "Maybe a menu opens, or maybe nothing happens.", False, "hedges"))
    if same_kind:
        other = rng.choice(same_kind).transition
        out.append(("adversarial", other.description, False, "another transition's outcome"))
    return out


def read_runs(path: Path) -> list[RunCases]:
    """A run folder, or the runs kept in a JSON file by `save_runs`."""
    return load_runs(path) if path.suffix == ".json" else [load_run(path)]


def adapter_answers(path: Path) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(run, record) -> [(adapter, answer)] from the recorded adapter answers (empty when there are none)."""
    if not path.exists():
        return {}
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for row in json.loads(path.read_text())["answers"]:
        out.setdefault((row["run"], row["record"]), []).append((row["adapter"], row["prediction"]))
    return out


def manual_labels(path: Path) -> dict[str, tuple[bool, str]]:
    """case id -> (label, note) from the labelling TSV."""
    if not path.exists():
        return {}
    rows = csv.reader(path.open(), delimiter="\t", quoting=csv.QUOTE_NONE)
    return {
        r[0]: (r[1].strip().lower() in ("1", "true", "right", "yes"), r[2] if len(r) > 2 else "") for r in rows if r
    }


def manual_cases(path: Path) -> list[dict]:
    """Predictions a person wrote for transitions of the runs: `run:record`, prediction, right|wrong, note."""
    if not path.exists():
        return []
    rows = [r for r in csv.reader(path.open(), delimiter="\t", quoting=csv.QUOTE_NONE) if r and r[0][:1] != "#"]
    return [
        {"case": r[0], "n": n, "prediction": r[1], "label": r[2].strip() == "right", "note": r[3] if len(r) > 3 else ""}
        for n, r in enumerate(rows)
    ]


def build(runs: list[Path], out: Path, per_transition: int, seed: int) -> None:
    """Write the labelled set (and the review list of unlabelled model answers)."""
    rng = random.Random(seed)
    labels = manual_labels(HERE / "judge_labels_manual.tsv")
    answers = adapter_answers(ADAPTER_ANSWERS)
    sources, cases, review, kept = {}, [], [], []
    for run in [r for path in runs for r in read_runs(path)]:
        site = run.site if not re.match(r"^[\d.:]+$", run.site) else run.run.split("-")[0]
        run.site = site
        kept.append(run)
        sources[run.run] = Source(site=site, pages=sorted(run.pages.pages))
        for case in run.cases:
            split = split_of(site, case.transition.url_before)
            base = dict(source=run.run, split=split, acted=case.acted, transition=case.transition)
            kind = "model-adapter" if "adapter" in run.run else "model-base"
            cid = f"{run.run}:{case.record}:{kind}"
            if cid in labels:
                label, note = labels[cid]
                cases.append(
                    LabelledCase(id=cid, category=kind, prediction=case.prediction, correct=label, note=note, **base)
                )
            elif case.prediction.strip():
                review.append([cid, "", case.transition.description[:300], case.prediction[:300], case.label])
            for adapter, answer in answers.get((run.run, case.record), []):
                aid = f"{run.run}:{case.record}:model-adapter:{adapter}"
                if aid in labels:
                    label, note = labels[aid]
                    adapted = LabelledCase(
                        id=aid, category="model-adapter", prediction=answer, correct=label, note=note, **base
                    )
                    cases.append(adapted)
                else:
                    review.append([aid, "", case.transition.description[:300], answer[:300], case.label])
            made = generated(run, case, rng)
            for n, (category, text, label, note) in enumerate(rng.sample(made, min(per_transition, len(made)))):
                cases.append(
                    LabelledCase(
                        id=f"{run.run}:{case.record}:{category}:{n}",
                        category=category,
                        prediction=text,
                        correct=label,
                        note=note,
                        **base,
                    )
                )
    for row in manual_cases(HERE / "judge_labels_written.tsv"):  # predictions a person wrote for run transitions
        run_name, record = row["case"].split(":", 1)
        run = next(r for r in kept if r.run == run_name)
        case = next(c for c in run.cases if c.record == record)
        cases.append(
            LabelledCase(
                id=f"{row['case']}:written:{row['n']}",
                source=run_name,
                split=split_of(run.site, case.transition.url_before),
                category="handwritten",
                acted=case.acted,
                transition=case.transition,
                prediction=row["prediction"],
                correct=row["label"],
                note=row["note"],
            )
        )
    handwritten = HERE / "handwritten_cases.json"
    if handwritten.exists():  # recorded once by `--record-handwritten`; their pages are their site's run's
        extra = LabelledSet.model_validate_json(handwritten.read_text())
        for case in extra.cases:
            run_of_site = next(
                (name for name, src in sources.items() if src.site == extra.sources[case.source].site), None
            )
            cases.append(case.model_copy(update={"source": run_of_site or case.source}))
            sources.setdefault(case.source, extra.sources[case.source])
    LabelledSet(rules=RULES, sources=sources, cases=cases).save(out)
    save_runs(kept, out.parent / "judge_runs.json")
    with (out.parent / "judge_labels_review.tsv").open("w") as f:
        csv.writer(f, delimiter="\t").writerows(review)
    counts = {}
    for c in cases:
        counts[(c.split, c.category, c.correct)] = counts.get((c.split, c.category, c.correct), 0) + 1
    print(f"{len(cases)} cases ({len(review)} model answers await a label) -> {out}")
    for key in sorted(counts):
        print(f"  {key[0]:12s} {key[1]:14s} {'right' if key[2] else 'wrong':6s} {counts[key]}")


def record_handwritten(path: Path) -> None:
    """Record the live transitions of a person's cases (site, path, element clicked, prediction, label) on fresh
    bundled sites, and keep them in handwritten_cases.json."""
    import asyncio

    import yaml

    from explorer import BrowserConfig, Chromium, SiteConfig
    from explorer.calibration import capture
    from explorer.records import Action
    from explorer.roles.judger import acted_name
    from explorer.transition import diff
    from sites import serve_sites

    specs = yaml.safe_load(path.read_text())

    async def record() -> dict:
        servers = serve_sites(port=0, slow_seconds=5)
        try:
            sites = {n: SiteConfig(name=n, start_url=u, reset_url=u + "__reset") for n, u in servers.urls.items()}
            out = {}
            async with await Chromium.launch(BrowserConfig(), [s.start_url for s in sites.values()]) as chromium:
                sessions = {n: await chromium.new_session(s) for n, s in sites.items()}
                for spec in specs:
                    key = (spec["site"], spec["path"], spec["click"])
                    if key not in out:
                        session = sessions[spec["site"]]
                        await capture(session, [{"goto": spec["path"]}])
                        before = await session.observe()
                        element = next(e for e in before.elements if e.name == spec["click"])
                        action = Action.on(element)
                        outcome = await session.act(action, before)
                        out[key] = (action, diff(before, await session.observe(), outcome))
            return out
        finally:
            servers.stop()

    recorded = asyncio.run(record())
    cases, sources = [], {}
    for n, spec in enumerate(specs):
        action, t = recorded[(spec["site"], spec["path"], spec["click"])]
        source = f"{spec['site']}-handwritten"
        sources[source] = Source(site=spec["site"], pages=sorted({(t.title_before, ""), (t.title_after, "")}))
        cases.append(
            LabelledCase(
                id=f"{source}:{n}",
                source=source,
                split=split_of(spec["site"], t.url_before),
                category="handwritten",
                acted=acted_name(action),
                transition=t,
                prediction=spec["prediction"],
                correct=spec["correct"],
                note=f"click {spec['click']!r} on /{spec['path']}",
            )
        )
    LabelledSet(rules=RULES, sources=sources, cases=cases).save(HERE / "handwritten_cases.json")
    print(f"recorded {len(cases)} handwritten cases -> {HERE / 'handwritten_cases.json'}")


def replayed_action(element, t, rng: random.Random):
    """The run's action on `element`, rebuilt as `explorer.candidates.action_for` builds it, with the typed or
    selected value read back from the transition (a search's query from the URL it opened) where it shows."""
    from urllib.parse import parse_qsl, urlsplit

    from explorer.candidates import action_for
    from explorer.records import Action

    action = action_for(element, rng)
    value = next((c.after for c in t.changed if c.name == element.name and c.field == "value" and c.after), None)
    query = [v for _, v in parse_qsl(urlsplit(t.url_after).query) if v] if t.url_changed else []
    if action.kind == "type" and (value or query):
        return action.model_copy(update={"text": value or query[0]})
    if action.kind == "select" and value in element.options:
        return Action.on(element, "select", option=value)
    return action


def record_adapter(adapters: list[Path], runs: list[Path], threads: int) -> None:
    """Record each adapter's Predictor answers to the runs' real transitions (see the module doc) in
    judge_adapter_answers.json; the transitions are observed once, then every adapter answers them all."""
    import asyncio
    from urllib.parse import urlsplit

    from explorer import BrowserConfig, Chromium, SiteConfig
    from explorer.models import ModelConfig, load_model
    from explorer.records import Action
    from sites import serve_sites
    from tests.thirdparty import django_admin_site, serve_django_admin
    from training.evaluate import predictor_predictions
    from training.samples import CRAWL_REASONING, Sample

    kept = [r for path in runs for r in read_runs(path)]

    def served(serve, port: int):
        try:
            return serve(port)
        except (OSError, RuntimeError):  # the run's port is taken: any free one
            return serve(0)

    async def observe_all() -> tuple[list[Sample], list[dict]]:
        bundled = served(lambda port: serve_sites(port=port, slow_seconds=5), 8700)
        admin = served(serve_django_admin, 8800)
        try:
            sites = {n: SiteConfig(name=n, start_url=u, reset_url=u + "__reset") for n, u in bundled.urls.items()}
            sites["django-admin"] = django_admin_site(admin.url)
            samples, rows = [], []
            async with await Chromium.launch(BrowserConfig(), [s.start_url for s in sites.values()]) as chromium:
                for run in kept:
                    site = sites[run.site]
                    session = await chromium.new_session(site)
                    await session.reset()  # logs in where the site has login steps
                    parts = urlsplit(site.start_url)
                    origin = f"{parts.scheme}://{parts.netloc}"
                    for case in run.cases:
                        t, rng = case.transition, random.Random(f"{run.run}:{case.record}")
                        before = urlsplit(t.url_before)
                        path = before.path + (f"?{before.query}" if before.query else "")
                        path += f"#{before.fragment}" if before.fragment else ""
                        await session.act(Action(kind="goto", url=origin + path))
                        obs = await session.observe()
                        element = next((e for e in obs.elements if Action.on(e).label == case.label), None)
                        if element is None:
                            print(f"  {run.run}:{case.record}: no {case.label} on {path}, left out")
                            continue
                        action = replayed_action(element, t, rng)
                        samples.append(
                            Sample(
                                run=run.run,
                                record_id=case.record,
                                kind="crawl",
                                node="",
                                observation=obs,
                                action=action,
                                selector_reasoning=CRAWL_REASONING,
                                transition=t,
                                outcome_reasoning="",
                                site=site,
                            )
                        )
                        rows.append(
                            {
                                "run": run.run,
                                "record": case.record,
                                "action": action.describe(),
                                "title_seen": obs.title,
                                "same_title": obs.title == t.title_before,
                            }
                        )
                    await session.close()
            return samples, rows
        finally:
            bundled.stop()
            admin.stop()

    samples, rows = asyncio.run(observe_all())
    print(f"observed {len(samples)} of {sum(len(r.cases) for r in kept)} transitions")
    model = load_model(ModelConfig(threads=threads))
    answers = []
    for folder in adapters:
        name = model.load_adapter(folder, name=folder.name, activate=False)
        predictions = predictor_predictions(model, samples, name)
        for row, prediction in zip(rows, predictions, strict=True):
            answers.append(
                {"adapter": name}
                | row
                | {"prediction": prediction.change, "raw": prediction.raw, "fallback": prediction.fallback}
            )
        print(f"  {name}: {len(predictions)} answers, {sum(p.fallback for p in predictions)} fallbacks")
    doc = {
        "about": "Predictor answers of LoRA adapters (bench/training.py) to the real transitions of judge_runs.json, "
        "recorded by `build_judge_labels.py --record-adapter` (see its module doc)",
        "adapters": {folder.name: str(folder) for folder in adapters},
        "answers": answers,
    }
    ADAPTER_ANSWERS.write_text(json.dumps(doc, ensure_ascii=False, indent=0) + "\n")
    print(f"recorded {len(answers)} adapter answers -> {ADAPTER_ANSWERS}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--out", type=Path, default=HERE / "judge_labels.json")
    p.add_argument("--per-transition", type=int, default=3, help="generated cases kept per transition")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--record-handwritten", type=Path, metavar="YAML", help="record these cases' transitions first")
    p.add_argument(
        "--record-adapter", type=Path, nargs="+", metavar="ADAPTER_DIR", help="record these adapters' answers first"
    )
    p.add_argument("--threads", type=int, default=1, help="CPU threads of the model (--record-adapter)")
    args = p.parse_args()
    if args.record_handwritten:
        record_handwritten(args.record_handwritten)
    if args.record_adapter:
        record_adapter(args.record_adapter, args.runs, args.threads)
    build(args.runs, args.out, args.per_transition, args.seed)


if __name__ == "__main__":
    main()
