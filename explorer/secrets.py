"""A site's secret values (every ${NAME} its config references, as set in the environment) and their redaction
from an observation's text before anything is stored: title, headings, texts, the text form, element names and
values; and from the browser's dialog messages and event details. URLs are kept as they are (the explorer
navigates by them; dataset building scrubs them). Pixels are not text: mask what shows a secret with the site
config's `mask` selectors (observe.py)."""

from __future__ import annotations

import os

from explorer.config import ENV_REF, SiteConfig
from explorer.records import Observation

MIN_SECRET_LEN = 4  # shorter values would redact ordinary words
REDACTED = "[SECRET]"


def site_secrets(site: SiteConfig, extra_env: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Secret values for a site: every ${NAME} its config references, and `extra_env`, as set in the environment;
    longest first."""
    names = set(ENV_REF.findall(site.model_dump_json())) | set(extra_env)
    values = {os.environ[n] for n in names if os.environ.get(n)}
    return sorted((v for v in values if len(v) >= MIN_SECRET_LEN), key=len, reverse=True)


def redact_text(text: str, secrets: list[str]) -> str:
    """`text` with every secret value replaced by [SECRET] (a dialog's message, an event's detail)."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def redact(obs: Observation, secrets: list[str]) -> Observation:
    """`obs` with every secret value replaced by [SECRET] in its text fields (the same object when none occurs)."""
    fields = (obs.title, obs.text, *obs.headings, *obs.texts)
    elements = [v for e in obs.elements for v in (e.name, e.value)]
    if not any(s in f for s in secrets for f in (*fields, *elements)):
        return obs
    elements_clean = [
        e.model_copy(
            update={
                "name": redact_text(e.name, secrets),
                "value": redact_text(e.value, secrets),
            }
        )
        for e in obs.elements
    ]
    return obs.model_copy(
        update={
            "title": redact_text(obs.title, secrets),
            "text": redact_text(obs.text, secrets),
            "headings": [redact_text(h, secrets) for h in obs.headings],
            "texts": [redact_text(t, secrets) for t in obs.texts],
            "elements": elements_clean,
        }
    )
