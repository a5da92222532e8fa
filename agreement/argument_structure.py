"""Argument-structure metrics (CheckWhy): a structure against a reference structure.

Plain functions over plain data (no Django): a structure is a list of steps
``{"premises": [ids], "conclusion": id or "claim"}``.

* :func:`structure_metrics` — everything below in one dict, as exports write it per item;
* edge similarity — exact-match similarity over support edges ``premise → conclusion``,
  |E ∩ E'| / |E ∪ E'|; step similarity — the same over whole steps;
* leaf F1 and AllCorrect — leaf evidence (premises that no step concludes) against the
  reference's leaves; AllCorrect is 1 only when the two leaf sets are equal;
* step F1 and AllCorrect — steps match when their premise sets and conclusions are equal.

Why the implementation lives in :mod:`annotation.argument_graph`: the task type's
``export_row`` writes these metrics per item, and ``annotation`` must never import ``agreement``
(ARCHITECTURE.md). The structure model (normalisation, leaves, steps as keys) is defined once
there, in a Django-free module, and this module is the agreement package's public face for it,
so reports and notebooks import metrics from ``agreement`` like every other metric and nothing is
written twice. Importing it loads no Django (a test holds that).
"""

from annotation.argument_graph import (
    edges,
    leaves,
    normalise_steps,
    parse_compact,
    set_prf,
    step_keys,
    structure_metrics,
    to_compact,
)

__all__ = [
    "edges",
    "leaves",
    "normalise_steps",
    "parse_compact",
    "set_prf",
    "step_keys",
    "structure_metrics",
    "to_compact",
]
