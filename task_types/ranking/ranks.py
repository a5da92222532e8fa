"""The tie conventions of rankings and the letters outputs are shown under.

A project's ``tie_convention`` says how tied outputs are ranked (1 is always best):

* ``competition`` (the default): standard competition ranking ("1224"): tied outputs share the
  best rank of their group and the next rank counts every output before it (1, 1, 3);
* ``dense``: dense ranking ("1223"): the next rank follows the shared one (1, 1, 2);
* ``free``: any ranks from 1 to k, ties allowed, no convention checked (as a study whose original
  guideline said only "ties share a rank").

Dense ranks are written beside the stored ranks in exports.
"""

from __future__ import annotations


def output_letter(index: int) -> str:
    """The letter of the output shown at ``index`` (0 -> "A")."""
    return chr(ord("A") + index)


def is_standard_competition(ranks: list[int]) -> bool:
    """Whether every rank is 1 + the number of outputs ranked strictly better (so 1, 1, 3)."""
    return all(rank == 1 + sum(other < rank for other in ranks) for rank in ranks)


TIE_CONVENTIONS = ("competition", "dense", "free")
CONVENTION_EXAMPLES = {"competition": "1, 1, 3", "dense": "1, 1, 2"}


def is_dense(ranks: list[int]) -> bool:
    """Whether the distinct ranks are exactly 1, 2, … (so 1, 1, 2)."""
    return sorted(set(ranks)) == list(range(1, len(set(ranks)) + 1))


def follows_convention(ranks: list[int], convention: str) -> bool:
    if convention == "dense":
        return is_dense(ranks)
    if convention == "free":
        return True
    return is_standard_competition(ranks)


def convention_ranks(values: list[int], convention: str) -> list[int]:
    """The ranks the ordering ``values`` expresses, written in ``convention``."""
    if convention == "dense":
        return dense_ranks(competition_ranks(values))
    if convention == "free":
        return list(values)
    return competition_ranks(values)


def competition_ranks(values: list[int]) -> list[int]:
    """Standard competition ranks of the ordering ``values`` expresses (lower is better)."""
    return [1 + sum(other < value for other in values) for value in values]


def dense_ranks(ranks: list[int]) -> list[int]:
    """Dense ranks ("1223") of standard competition ranks, for exports."""
    position = {value: i + 1 for i, value in enumerate(sorted(set(ranks)))}
    return [position[rank] for rank in ranks]
