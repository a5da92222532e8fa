"""Ranking with ties (Atanasova et al. 2020; ReproHum #0087-01): annotators rank the k outputs of
named systems for one claim on each of the project's criteria (e.g. Coverage, Non-redundancy,
Non-contradiction, Overall).

Tie convention: standard competition ranking ("1224"). Ranks run from 1 (best) to k; tied outputs
share the best rank of their group and the next output's rank counts every output before it, so
three outputs with a tie for first are ranked 1, 1, 3 (never 1, 1, 2). Answers are validated,
stored and exported in this convention; exports add the dense rank ("1223") beside it.

Blinding: annotators never see system names. Each output gets an opaque key at import (random per
item, so keys reveal nothing across items); the page shows the outputs as "Output A, B, C…" in an
order shuffled per (item, annotator) with a seeded generator, so the same annotator always sees the
same order. The answer stores that order and the ranks by key; exports re-attach the systems::

    {"order": ["k3f…", "a91…", "0c2…"],               # keys as shown, left to right
     "ranks": {"Coverage": {"k3f…": 1, "a91…": 1, "0c2…": 3}, …}}

The package: ``task.py`` (the task type), ``serializers.py`` (config, payload, answer),
``ranks.py`` (the tie convention and output letters), ``formats.py`` (CSV columns per system and
the ReproHum sheet with its mapping file), ``judging.py``, ``report.py``, ``demo.py``, and the
annotation page in ``templates/ranking/`` and ``static/ranking/``.
"""
