"""Each annotator's item order and counterbalanced sides, both derived from one number per
member (``Membership.order_seed``), so that both are recorded and can be reproduced.

Item order (crowd ``assignment_strategy``, ``projects.crowd``):

- ``in_order``: import order (``Item.position``), the same for everyone;
- ``least_annotated``: the items with the fewest live assignments first, then import order;
- ``random``: every item draws a random ``shuffle_key`` at import; an annotator walks the keys
  from their own starting point (``start``), upwards or downwards (``descending``), wrapping
  round once. Two annotators start at different points of the shuffled sequence and half of them
  walk it the other way, so each item's position varies between annotators and, for any two
  items, half of the annotators (in expectation) meet one first. The walk reads the partial index
  ``item_open_shuffle_idx`` (the open queue in key order) from the starting point: one indexed
  query per next, like the import order (a second one only when the walk wraps round).
  :func:`seeded_order` is the same order in Python: given the seed and the items' keys it lists
  the items in the order the annotator is offered them (the items other annotators filled first
  are passed over; N per item and the controls are kept exactly as in the other orders).
- ``active``: one weighted random order for everyone, highest ``Item.sampling_priority`` first
  (index ``item_open_active_idx``; the priorities come from the judges' uncertainty,
  ``llm_judges.services.sampling``, and give the probabilities of ``metrics.active_sampling``).

It is not a fresh permutation per annotator: all annotators walk one shuffled cycle, so an item's
neighbours on it are its neighbours for everyone (in one direction or the other). A per-annotator
permutation (sorting the open items by a hash of item and seed) cannot be read from an index: at
0 % full it sorts every open item on each next.

Sides (:func:`flipped`): a task type that shows two things side by side (the questionnaire's
pairwise questions) or outputs in an order (ranking) lays the item out in its usual way or
flipped (the task type's ``presentation``). An annotator's assignments are taken in pairs by
their sequence number (1–2, 3–4, …): one of each pair is flipped, which one is drawn from the
seed. So every annotator sees each side first equally often, within one, at any point of their
work, and the pattern is not a plain alternation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from annotation.models import SHUFFLE_KEYS


def start(seed: int) -> int:
    """Where the annotator's walk over the shuffle keys begins (in [0, 2^31))."""
    return seed % SHUFFLE_KEYS


def descending(seed: int) -> bool:
    """Whether the annotator walks the shuffle keys downwards."""
    return (seed // SHUFFLE_KEYS) % 2 == 1


def seeded_order(items: Iterable[tuple[int, int]], seed: int) -> list[int]:
    """The ids of ``items`` (``(item id, shuffle key)`` pairs) in the random order of the
    annotator with ``seed``: what ``assignment_next`` offers them when nobody else takes an item
    first."""
    ordered = sorted(items, key=lambda pair: (pair[1], pair[0]))
    origin = start(seed)
    if descending(seed):
        ordered.reverse()
        first = [i for i, key in ordered if key <= origin]
        rest = [i for i, key in ordered if key > origin]
    else:
        first = [i for i, key in ordered if key >= origin]
        rest = [i for i, key in ordered if key < origin]
    return first + rest


def _pair_bit(seed: int, pair: int) -> bool:
    digest = hashlib.blake2b(f"{seed}:{pair}".encode(), digest_size=1).digest()
    return bool(digest[0] & 1)


def flipped(seed: int, sequence: int) -> bool:
    """Whether the annotator's ``sequence``-th assignment (1-based) is laid out flipped: one of
    each pair of sequence numbers (1–2, 3–4, …) is, which one drawn from the seed."""
    pair, second = divmod(max(sequence, 1) - 1, 2)
    return _pair_bit(seed, pair) != bool(second)
