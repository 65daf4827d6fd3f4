"""Refusals for people: the API's error codes as sentences that say what to do next.

The status comes from the API's one mapping (``weave_http.problems.status_for``), so a
page answers what the API would (a stale version is 409, another namespace 404); only the
wording is the console's. The code is shown too, so an operator can look it up in
docs/operators-guide.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from weave_core.foundation.errors import WeaveError
from weave_http.problems import status_for

_ADVICE: Final = {
    "control_version_conflict": (
        "Someone changed this instance after you opened the page (its control version is "
        "now {control_version}, your page showed {expected_control_version}). Nothing was "
        "changed. Reload the instance, look again and decide again."),
    "state_version_conflict": (
        "The step {step_id} changed after you opened the page (its state version is now "
        "{state_version}, your page showed {expected_state_version}). Nothing was changed. "
        "Reload the instance, look again and decide again."),
    "permission_denied": (
        "Your token lacks the '{permission}' permission, so this action was refused. "
        "Sign in with a token that has it."),
    "not_found": "There is no such object in your namespace.",
    "step_not_found": "That step is not in the definition or was never activated.",
    "operation_conflict": (
        "This operation id was already used for a different request. Reload the page to "
        "get a new one."),
    "workflow_settled": "The instance has already ended; nothing more can be done to it.",
    "already_paused": "The instance is already paused.",
    "not_paused": "The instance is not paused.",
    "already_cancelling": "The instance is already stopping.",
    "cancel_requested": "A cancel was accepted for this instance: it may only end cancelled.",
    "not_in_review": "The instance is not in review.",
    "review_blocked": "Steps still block the review: conclude on or recover them first.",
    "work_unsettled": "Started work is still running; wait until it settles.",
    "effect_unknown": "An unknown effect has no settling conclusion yet: conclude first.",
    "evidence_required": (
        "Recovery needs a conclusion 'effect_confirmed_absent' or 'retry_safe' with "
        "evidence here, because the step's effect is not known to be absent."),
    "effect_present": "The effect was confirmed present: the step must not run again.",
    "step_succeeded": "A succeeded step can never be re-run.",
    "step_not_recoverable": "This step is active, skipped or composite: it cannot be recovered.",
    "step_not_in_review": "Conclusions apply only to failed, cancelled or in-review steps.",
    "deadline_passed": "The instance deadline has passed: conclude and resolve instead.",
    "signal_conflict": "This signal id was already used with other content.",
    "csrf_failed": "This form is not from this console session. Reload the page.",
    "unauthenticated": "Sign in again.",
}


@dataclass(frozen=True)
class Refusal:
    status: int
    code: str
    title: str
    message: str
    detail: str


def refusal(exc: WeaveError) -> Refusal:
    """What a page shows for ``exc``: the API's status, a sentence, the engine's detail."""
    status, title = status_for(exc)
    if exc.code == "csrf_failed":
        status, title = 403, "Refused"
    advice = _ADVICE.get(exc.code)
    message = exc.message
    if advice is not None:
        try:
            message = advice.format(**exc.details)
        except (KeyError, IndexError, ValueError):
            message = advice.split("(")[0].strip() if "{" in advice else advice
    problems = exc.details.get("problems")
    if isinstance(problems, list) and problems:
        message += " " + "; ".join(
            f"{p.get('path', '')}: {p.get('message', '')}" for p in problems
            if isinstance(p, dict))
    return Refusal(status, exc.code, title, message, exc.message)


__all__ = ["Refusal", "refusal"]
