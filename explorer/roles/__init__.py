"""The roles, one model: Selector, Predictor, Judger, and the Actor of agent evaluation. Each builds messages
from a prompt file and parses the answer into a typed record, with a bounded repair and a recorded fallback
instead of a crash."""

from explorer.novelty import rank_candidates, signature
from explorer.roles.actor import ActorChoice, act, actor_messages, parse_action
from explorer.roles.judger import RULE_JUDGE, acted_name, llm_verdict, rule_verdict
from explorer.roles.predictor import parse_prediction, predict, predict_many, predictor_messages
from explorer.roles.selector import parse_selection, select, selector_messages
from explorer.roles.stats import RoleStats

__all__ = [
    "RULE_JUDGE",
    "ActorChoice",
    "RoleStats",
    "act",
    "acted_name",
    "actor_messages",
    "llm_verdict",
    "parse_action",
    "parse_prediction",
    "parse_selection",
    "predict",
    "predict_many",
    "predictor_messages",
    "rank_candidates",
    "rule_verdict",
    "select",
    "selector_messages",
    "signature",
]
