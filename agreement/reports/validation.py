"""Judge validation against the humans: one report per project, from a :class:`ReportInput`
whose coders include the judges (plain structures, no Django).

What is computed, for every judge of the input:

* **set tasks** (the task type's :class:`JudgeValidationHooks` has ``values``): Krippendorff's
  alpha between the judge and the merged humans over the items both answered, with the task
  type's merge rule and distance (citation recovery: union of the humans' selections, "none" as
  -1, every label outside gold one common label, Jaccard distance), and its bootstrap interval;
* **label tasks** (``labels``): each labelled part of an item (the whole item, or one claim…) is
  a unit. The humans' reference label of a unit is chosen on a **subset**:

  - ``all``: the plurality of the humans' labels (units whose most common label is tied are
    left out and counted);
  - ``agreed``: units with at least two human labels, all equal (UPHILL validates its
    entailment judges on the pairs with perfect human agreement);
  - ``certain``: units where every human label is certain (no "not sure"), reference the
    plurality; offered only when the task type records certainty.

  On the units the judge labelled: nominal alpha between judge and reference with its bootstrap
  interval; accuracy, macro F1 and support-weighted F1 with percentile bootstrap intervals over
  units; per-class precision / recall / F1 / support and the confusion matrix
  (:mod:`metrics.classification`, scikit-learn's conventions).

Intervals use the report's ``n_boot`` and confidence and a fixed seed, so the same data give the
same figures on the page, in the CSV files and from ``manage.py judge_report``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, TypedDict

from agreement.reports.generic import alpha_with_ci
from agreement.reports.inputs import BOOTSTRAP_SEED, HUMAN, JUDGE, ReportInput
from agreement.reports.sections import JudgeValidationHooks, ValidationLabel
from agreement.reports.tables import Table, column, table
from metrics.classification import (
    classification_bootstrap,
    classification_scores,
    confusion_matrix,
    plurality_label,
)

SUBSETS = {
    "all": "All units (reference: the humans' most common label)",
    "agreed": "Units where the humans agree perfectly (at least two labels, all equal)",
    "certain": "Units where every human is certain (no “not sure”)",
}
JUDGE_CODER, HUMANS_CODER = "judge", "humans"


class JudgeValidation(TypedDict):
    """A project's judges validated against its humans (``judge_validation_report``): what the
    judge validation page, ``manage.py judge_report`` and the replays read."""

    task_type: str
    kind: str  # "labels", "sets", or "" when the task type registers no judge validation
    subset: str  # the subset validated on: a key of ``subsets``
    subsets: dict[str, str]  # the subsets the task type offers -> their description
    judges: list[str]  # the judges validated, by label
    humans: int  # human coders counted
    counts: dict[str, int]  # e.g. units_with_humans, units_in_subset
    tables: dict[str, Table]  # "judges"; for labels also "per_class" and "confusion"
    notes: list[str]
    n_boot: int
    confidence: float


class ProjectJudgeValidation(JudgeValidation):
    """``agreement.selectors.judge_validation``: with the judges the page may choose from."""

    available_judges: list[str]


def subsets_for(hooks: JudgeValidationHooks | None) -> list[str]:
    """The subsets a task type's judges can be validated on ([] when it has no judge
    validation, only ``all`` for set tasks)."""
    if hooks is None:
        return []
    if hooks.labels is None:
        return ["all"]
    return ["all", "agreed", *(["certain"] if hooks.records_certainty else [])]


def check_subset(hooks: JudgeValidationHooks | None, subset: str) -> None:
    """``ValueError`` naming the subsets offered when the task type does not offer ``subset``
    (a task type without judge validation accepts any: it shows no figures)."""
    subsets = subsets_for(hooks)
    if hooks is not None and subset not in subsets:
        raise ValueError(f"unknown subset {subset!r}: use one of {', '.join(subsets)}")


def kind_of(hooks: JudgeValidationHooks | None) -> str:
    if hooks is None:
        return ""
    return "labels" if hooks.labels is not None else "sets"


def _unit(item_key: str, part: str) -> str:
    return item_key if not part else f"{item_key} · {part}"


def _reference(labels: list[ValidationLabel], subset: str) -> str | None:
    """The humans' reference label of one unit on ``subset``, or None (unit not in it)."""
    values = [lab.label for lab in labels]
    if subset == "agreed":
        return values[0] if len(values) >= 2 and len(set(values)) == 1 else None
    if subset == "certain" and not (labels and all(lab.certain is True for lab in labels)):
        return None
    return plurality_label(values)


def _human_labels(inp: ReportInput, hooks: JudgeValidationHooks) -> dict[str, list]:
    """``{unit: [ValidationLabel of each human]}`` over every item."""
    found: dict[str, list[ValidationLabel]] = defaultdict(list)
    for answers in inp.answers_of(HUMAN).values():
        for key, answer in answers.items():
            item = inp.items.get(key)
            if item is None or not isinstance(answer, Mapping):
                continue
            for part, label in hooks.labels(item, answer).items():
                found[_unit(key, part)].append(label)
    return found


def _judge_labels(inp: ReportInput, hooks: JudgeValidationHooks, coder: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, answer in inp.answers.get(coder, {}).items():
        item = inp.items.get(key)
        if item is None or not isinstance(answer, Mapping):
            continue
        for part, label in hooks.labels(item, answer).items():
            found[_unit(key, part)] = label.label
    return found


def _interval_keys(prefix: str, interval: Any) -> dict[str, float]:
    return {
        prefix: interval.value,
        f"{prefix}_lower": interval.lower,
        f"{prefix}_upper": interval.upper,
    }


def _label_figures(
    inp: ReportInput, hooks: JudgeValidationHooks, subset: str
) -> tuple[list[dict], list[dict], list[dict], dict]:
    """Rows of the judges, per-class and confusion tables, and the subset's counts."""
    humans = _human_labels(inp, hooks)
    reference = {unit: _reference(labels, subset) for unit, labels in humans.items()}
    in_subset = {unit: label for unit, label in reference.items() if label is not None}
    counts = {"units_with_humans": len(humans), "units_in_subset": len(in_subset)}
    n_boot, confidence = inp.options.n_boot, inp.options.confidence
    judge_rows, class_rows, cell_rows = [], [], []
    for coder in inp.coder_ids(JUDGE):
        name = next(c.label or c.id for c in inp.coders if c.id == coder)
        mine = _judge_labels(inp, hooks, coder)
        units = [unit for unit in in_subset if unit in mine]
        truth = [in_subset[unit] for unit in units]
        given = [mine[unit] for unit in units]
        data = {u: {JUDGE_CODER: mine[u], HUMANS_CODER: in_subset[u]} for u in units}
        row: dict[str, Any] = {
            "judge": name,
            "units": len(units),
            "not_in_subset": sum(1 for unit in mine if unit not in in_subset),
        }
        row.update(alpha_with_ci(data, "nominal", n_boot=n_boot, confidence=confidence))
        boot = classification_bootstrap(
            truth, given, n_boot=n_boot, confidence=confidence, seed=BOOTSTRAP_SEED
        )
        row.update(_interval_keys("accuracy", boot.accuracy))
        row.update(_interval_keys("macro_f1", boot.macro_f1))
        row.update(_interval_keys("weighted_f1", boot.weighted_f1))
        judge_rows.append(row)
        scores = classification_scores(truth, given, hooks.label_order)
        for cls in scores.per_class:
            class_rows.append(
                {
                    "judge": name,
                    "label": cls.label,
                    "precision": cls.precision,
                    "recall": cls.recall,
                    "f1": cls.f1,
                    "support": cls.support,
                    "predicted": cls.predicted,
                }
            )
        labels, matrix = confusion_matrix(truth, given, hooks.label_order)
        for i, ref in enumerate(labels):
            for j, pred in enumerate(labels):
                cell_rows.append(
                    {"judge": name, "reference": ref, "predicted": pred, "count": matrix[i][j]}
                )
    return judge_rows, class_rows, cell_rows, counts


def _set_figures(inp: ReportInput, hooks: JudgeValidationHooks) -> tuple[list[dict], dict]:
    human_answers = inp.answers_of(HUMAN)
    judge_rows = []
    compared = 0
    for coder in inp.coder_ids(JUDGE):
        name = next(c.label or c.id for c in inp.coders if c.id == coder)
        mine = inp.answers.get(coder, {})
        data = {}
        for key, item in inp.items.items():
            answer = mine.get(key)
            people = [a[key] for a in human_answers.values() if isinstance(a.get(key), Mapping)]
            if not isinstance(answer, Mapping) or not people:
                continue
            pair = hooks.values(item, answer, people)
            if pair is not None:
                data[key] = {JUDGE_CODER: pair[0], HUMANS_CODER: pair[1]}
        compared = max(compared, len(data))
        row = {"judge": name, "units": len(data)}
        row.update(
            alpha_with_ci(
                data,
                hooks.distance,
                n_boot=inp.options.n_boot,
                confidence=inp.options.confidence,
            )
        )
        judge_rows.append(row)
    return judge_rows, {"units_compared": compared}


def _judges_table(rows: list[dict], *, kind: str, distance: str) -> Table:
    columns = [
        column("judge", "Judge", "text"),
        column("units", "Units compared", "int"),
        column("alpha", f"α judge vs merged humans ({distance})", "ci"),
    ]
    if kind == "labels":
        columns[2:2] = [column("not_in_subset", "Judged units outside the subset", "int")]
        columns += [
            column("accuracy", "Accuracy", "ci"),
            column("macro_f1", "Macro F1", "ci"),
            column("weighted_f1", "Weighted F1", "ci"),
        ]
    return table("Judges against the humans", columns, rows)


def _per_class_table(rows: list[dict]) -> Table:
    return table(
        "Per-class precision, recall and F1",
        [
            column("judge", "Judge", "text"),
            column("label", "Class (humans' label)", "text"),
            column("precision", "Precision"),
            column("recall", "Recall"),
            column("f1", "F1"),
            column("support", "Support (humans)", "int"),
            column("predicted", "Predicted (judge)", "int"),
        ],
        rows,
        note="Support: units whose reference (humans') label is the class; precision 0 when "
        "the judge never predicts a class, recall 0 when the humans never use it.",
    )


def _confusion_table(rows: list[dict]) -> Table:
    return table(
        "Confusion matrices (rows: humans, columns: judge)",
        [
            column("judge", "Judge", "text"),
            column("reference", "Humans' label", "text"),
            column("predicted", "Judge's label", "text"),
            column("count", "Units", "int"),
        ],
        rows,
    )


def judge_validation_report(
    inp: ReportInput, *, hooks: JudgeValidationHooks | None, subset: str = "all"
) -> JudgeValidation:
    """The judge validation of ``inp`` (its judges against its humans) on ``subset``.

    ``kind`` is "" (and no table) when the task type registers no judge validation. A subset the
    task type does not offer raises ``ValueError`` naming the ones it does.
    """
    check_subset(hooks, subset)
    subsets = subsets_for(hooks)
    kind = kind_of(hooks)
    judges = [c.label or c.id for c in inp.coders if c.kind == JUDGE]
    result: JudgeValidation = {
        "task_type": inp.task_type,
        "kind": kind,
        "subset": subset,
        "subsets": {name: SUBSETS[name] for name in subsets},
        "judges": judges,
        "humans": len(inp.coder_ids(HUMAN)),
        "counts": {},
        "tables": {},
        "notes": [],
        "n_boot": inp.options.n_boot,
        "confidence": inp.options.confidence,
    }
    if hooks is None:
        result["notes"].append("This task type has no judge validation.")
        return result
    if hooks.rule:
        result["notes"].append(hooks.rule)
    if kind == "labels":
        judge_rows, class_rows, cell_rows, counts = _label_figures(inp, hooks, subset)
        result["tables"] = {
            "judges": _judges_table(judge_rows, kind=kind, distance="nominal"),
            "per_class": _per_class_table(class_rows),
            "confusion": _confusion_table(cell_rows),
        }
    else:
        judge_rows, counts = _set_figures(inp, hooks)
        result["tables"] = {"judges": _judges_table(judge_rows, kind=kind, distance=hooks.distance)}
    result["counts"] = counts
    return result
