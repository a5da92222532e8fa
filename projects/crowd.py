"""A project's crowd-workflow settings: batches, control items, qualification, platforms.

They live in ``Project.crowd`` (JSON) rather than ``Project.config``, which belongs to the task
type. An empty object switches everything off: items are dealt one at a time, no controls are
mixed in and nobody needs to qualify, which is the behaviour of a plain project.

Keys (all optional; defaults in brackets):

- ``batch_size`` [0]: regular items per batch (a HIT). 0 deals items one at a time.
- ``controls_per_batch`` [0]: control items mixed into each batch (needs ``batch_size``). Where the
  task type's config sets a control quota (citation recovery's ``control_quota``, e.g. 2 positive
  + 1 negative), a batch holds the quota's controls instead, and this only switches them on.
- ``control_rate`` [0]: without batches, the share of dealt items that are controls (0–1).
- ``accuracy_threshold`` [0.7] and ``min_controls`` [3]: an annotator whose accuracy on control
  items falls below the threshold once they have answered at least ``min_controls`` is stopped.
- ``qualification_required`` [false]: only annotators who passed a qualification round reach the
  main items. ``qualification_size`` [0 = every qualification item] items per round,
  ``qualification_pass_mark`` [0.8], ``qualification_min_seconds`` [0] of active time for the
  whole round, ``qualification_rounds`` [1] rounds an annotator may take (each on items they have
  not seen).
- ``assignment_strategy`` ["in_order"]: the order items are offered in: "in_order" (import
  order), "least_annotated" (items with the fewest live assignments first, then import order) or
  "random" (each annotator's own order, reproducible from their membership's ``order_seed``; see
  ``annotation.ordering``) or "active" (active sampling for a prediction-powered estimate: the
  items the judges are least sure of are more likely to come first, in one weighted random order
  for everyone, highest ``Item.sampling_priority`` first; see ``metrics.active_sampling`` and
  ``llm_judges.services.sampling``). Every order keeps N annotators per item and the controls.
- ``batch_minutes`` [reservation window]: how long a batch stays reserved before it is abandoned
  and its items return to the pool.
- ``min_seconds_per_item`` [0]: annotators are warned before submitting faster than this, and the
  researcher's quality view counts such answers.
- ``prolific_completion_code`` / ``prolific_screened_out_code``: the study's codes on Prolific.
- ``mturk_sandbox`` [true]: post finished HITs to the MTurk sandbox rather than production.
- ``currency`` ["GBP"], ``reward_per_batch`` [0], ``bonus_per_batch`` [0] and
  ``screened_out_reward`` [0]: amounts for the payment export. A finished batch earns the reward,
  and the bonus as well when the worker passed quality control; a worker stopped by quality
  control before finishing a batch earns the screened-out reward (e.g. for the qualification
  round). Amounts have at most two decimals.
- ``allow_skip`` [false]: annotators may skip an item (with or without a flag); the item goes back
  to the pool for others and never comes back to them.
- ``flag_reasons`` [evidence broken, ambiguous, offensive, other]: the reasons an annotator
  chooses from when they flag an item (1–20, each up to 100 characters); a flag with the reason
  "other" needs words.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, fields
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.text import capfirst
from django.utils.translation import pgettext_lazy
from rest_framework import serializers

from core.serializers import KnownKeysOnly

STRATEGIES = ("in_order", "least_annotated", "random", "active")
MTURK_SUBMIT_URLS = {
    True: "https://workersandbox.mturk.com/mturk/externalSubmit",
    False: "https://www.mturk.com/mturk/externalSubmit",
}
PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
# Where a participant returns a submission ("Return submission") when the study has no
# screened-out code: returning frees the place and does not count against them.
PROLIFIC_SUBMISSIONS_URL = "https://app.prolific.com/submissions"
DEFAULT_FLAG_REASONS = ("evidence broken", "ambiguous", "offensive", "other")
# How the default reasons read on the annotation page, in the annotator's language (a reason a
# researcher wrote stays as written).
FLAG_REASON_LABELS = {
    "evidence broken": pgettext_lazy("flag reason", "Evidence broken"),
    "ambiguous": pgettext_lazy("flag reason", "Ambiguous"),
    "offensive": pgettext_lazy("flag reason", "Offensive"),
    "other": pgettext_lazy("flag reason", "Other"),
}


def flag_reason_label(reason: str) -> str:
    """A flag reason as annotators read it: a default one in the current language, one the
    researchers wrote as written (first letter capitalised)."""
    return str(FLAG_REASON_LABELS.get(reason) or capfirst(reason))


class CrowdSettingsSerializer(KnownKeysOnly):
    unknown_message = "Unknown setting; known ones: {known}."

    batch_size = serializers.IntegerField(min_value=0, max_value=500, default=0)
    controls_per_batch = serializers.IntegerField(min_value=0, max_value=500, default=0)
    control_rate = serializers.FloatField(min_value=0, max_value=1, default=0)
    accuracy_threshold = serializers.FloatField(min_value=0, max_value=1, default=0.7)
    min_controls = serializers.IntegerField(min_value=1, default=3)
    qualification_required = serializers.BooleanField(default=False)
    qualification_size = serializers.IntegerField(min_value=0, default=0)
    qualification_pass_mark = serializers.FloatField(min_value=0, max_value=1, default=0.8)
    qualification_min_seconds = serializers.IntegerField(min_value=0, default=0)
    qualification_rounds = serializers.IntegerField(min_value=1, max_value=20, default=1)
    assignment_strategy = serializers.ChoiceField(choices=STRATEGIES, default="in_order")
    batch_minutes = serializers.IntegerField(min_value=1, required=False)
    min_seconds_per_item = serializers.IntegerField(min_value=0, default=0)
    max_items_per_annotator = serializers.IntegerField(
        min_value=1,
        max_value=1_000_000,
        required=False,
        help_text="The most regular items one annotator is given (controls not counted); empty: "
        "no limit. Without batches only (a batch study sets batch_size).",
    )
    # max_length as the pattern's: the schema says it, and forms show a code on one line.
    prolific_completion_code = serializers.RegexField(
        r"^[A-Za-z0-9_-]{0,64}$", max_length=64, allow_blank=True, default=""
    )
    prolific_screened_out_code = serializers.RegexField(
        r"^[A-Za-z0-9_-]{0,64}$", max_length=64, allow_blank=True, default=""
    )
    mturk_sandbox = serializers.BooleanField(default=True)
    currency = serializers.RegexField(r"^[A-Z]{3}$", max_length=3, default="GBP")
    reward_per_batch = serializers.DecimalField(
        max_digits=8, decimal_places=2, min_value=Decimal(0), default=Decimal(0)
    )
    bonus_per_batch = serializers.DecimalField(
        max_digits=8, decimal_places=2, min_value=Decimal(0), default=Decimal(0)
    )
    screened_out_reward = serializers.DecimalField(
        max_digits=8, decimal_places=2, min_value=Decimal(0), default=Decimal(0)
    )
    allow_skip = serializers.BooleanField(
        default=False, help_text="Annotators may skip an item; it never comes back to them."
    )
    flag_reasons = serializers.ListField(
        child=serializers.CharField(max_length=100),
        min_length=1,
        max_length=20,
        default=list(DEFAULT_FLAG_REASONS),
        help_text="The reasons an annotator chooses from when flagging an item.",
    )

    def validate_flag_reasons(self, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("Each reason may be listed once.")
        return value

    def validate(self, attrs: dict) -> dict:
        if attrs["controls_per_batch"] and not attrs["batch_size"]:
            raise serializers.ValidationError(
                {"controls_per_batch": "Controls per batch need batches: set batch_size too."}
            )
        if attrs["control_rate"] and attrs["batch_size"]:
            raise serializers.ValidationError(
                {"control_rate": "With batches, use controls_per_batch instead of control_rate."}
            )
        if attrs.get("max_items_per_annotator") and attrs["batch_size"]:
            raise serializers.ValidationError(
                {
                    "max_items_per_annotator": "With batches, each batch is batch_size items "
                    "and a worker takes as many batches as the study lets them; leave this empty."
                }
            )
        if attrs["control_rate"] >= 1:
            raise serializers.ValidationError(
                {"control_rate": "Must be below 1: some regular items must be dealt too."}
            )
        return attrs


@dataclass(frozen=True)
class CrowdSettings:
    batch_size: int = 0
    controls_per_batch: int = 0
    control_rate: float = 0.0
    accuracy_threshold: float = 0.7
    min_controls: int = 3
    qualification_required: bool = False
    qualification_size: int = 0
    qualification_pass_mark: float = 0.8
    qualification_min_seconds: int = 0
    qualification_rounds: int = 1
    assignment_strategy: str = "in_order"
    batch_minutes: int = 0
    min_seconds_per_item: int = 0
    max_items_per_annotator: int | None = None
    prolific_completion_code: str = ""
    prolific_screened_out_code: str = ""
    mturk_sandbox: bool = True
    currency: str = "GBP"
    reward_per_batch: Decimal = Decimal(0)
    bonus_per_batch: Decimal = Decimal(0)
    screened_out_reward: Decimal = Decimal(0)
    allow_skip: bool = False
    flag_reasons: tuple[str, ...] = DEFAULT_FLAG_REASONS

    @property
    def batches(self) -> bool:
        return self.batch_size > 0

    @property
    def controls(self) -> bool:
        """Whether control items are mixed into the queue (and so accuracy is checked)."""
        return self.controls_per_batch > 0 or self.control_rate > 0

    @property
    def mturk_submit_url(self) -> str:
        return MTURK_SUBMIT_URLS[self.mturk_sandbox]

    def prolific_complete_url(self, *, screened_out: bool = False) -> str:
        code = self.prolific_screened_out_code if screened_out else self.prolific_completion_code
        return PROLIFIC_COMPLETE_URL.format(code=code) if code else ""


def parse_crowd_settings(data) -> CrowdSettings:
    """Validated settings with defaults filled; raises DRF ``ValidationError`` on bad input."""
    serializer = CrowdSettingsSerializer(data=data or {})
    serializer.is_valid(raise_exception=True)
    values = dict(serializer.validated_data)
    values.setdefault("batch_minutes", settings.CONCORD_RESERVATION_MINUTES)
    values["flag_reasons"] = tuple(values.get("flag_reasons") or DEFAULT_FLAG_REASONS)
    known = {f.name for f in fields(CrowdSettings)}
    return CrowdSettings(**{k: v for k, v in values.items() if k in known})


def validate_crowd_settings(value) -> None:
    """Model-field validator for ``Project.crowd`` (so the admin form reports bad settings)."""
    if not isinstance(value, dict):
        raise ValidationError("Crowd settings must be a JSON object.")
    try:
        parse_crowd_settings(value)
    except serializers.ValidationError as exc:
        from core.errors import first_error

        field, message = first_error(exc.detail)
        raise ValidationError(f"{field}: {message}" if field else message) from None


def crowd_settings(project) -> CrowdSettings:
    """The project's settings, parsed once per project instance, and in a process once per
    distinct settings: every annotator request loads the project afresh, and the serializer's
    validation cost about a millisecond of CPU each time (issue 31). The settings are frozen,
    so one parsed value serves every instance with the same JSON."""
    cached = getattr(project, "_crowd_settings", None)
    if cached is None:
        text = json.dumps(project.crowd or {}, sort_keys=True, default=str)
        cached = _parsed_crowd_settings((text, settings.CONCORD_RESERVATION_MINUTES))
        project._crowd_settings = cached
    return cached


@functools.lru_cache(maxsize=512)
def _parsed_crowd_settings(key: tuple[str, int]) -> CrowdSettings:
    """``key``: the settings' JSON and the reservation window that fills ``batch_minutes`` when
    they name none (a test may change it); a refused settings raises, and is not kept."""
    return parse_crowd_settings(json.loads(key[0]))
