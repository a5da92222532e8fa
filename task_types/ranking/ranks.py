"""The tie convention of rankings and the letters outputs are shown under.

Standard competition ranking ("1224"): 1 is best, tied outputs share the best rank of their
group and the next rank counts every output before it (1, 1, 3). Dense ranks ("1223") are only
written beside them in exports.
"""

from __future__ import annotations


def output_letter(index: int) -> str:
    """The letter of the output shown at ``index`` (0 -> "A")."""
    return chr(ord("A") + index)


def is_standard_competition(ranks: list[int]) -> bool:
    """Whether every rank is 1 + the number of outputs ranked strictly better (so 1, 1, 3)."""
    return all(rank == 1 + sum(other < rank for other in ranks) for rank in ranks)


def competition_ranks(values: list[int]) -> list[int]:
    """Standard competition ranks of the ordering ``values`` expresses (lower is better)."""
    return [1 + sum(other < value for other in values) for value in values]


def dense_ranks(ranks: list[int]) -> list[int]:
    """Dense ranks ("1223") of standard competition ranks, for exports."""
    position = {value: i + 1 for i, value in enumerate(sorted(set(ranks)))}
    return [position[rank] for rank in ranks]
