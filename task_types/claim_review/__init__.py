"""Claim review (FaStfact protocol): annotators audit a factuality pipeline that split a long-form
answer into atomic claims and verified each claim against searched evidence.

Screen 1, revise: keep, remove (reason: redundant / not a claim) or revise each extracted claim, and
add missing claims at their place in response order. Screen 2, verify: agree or disagree with the
pipeline's label of every kept, revised or added claim; on disagreement give the correct label.

The stored answer lists every claim in response order::

    {"claims": [
        {"id": "43b2b7-0", "action": "keep", "agreement": "agree"},
        {"id": "c2afab-1", "action": "revise", "text": "…", "agreement": "disagree", "label": "refuted"},
        {"id": "e8845f-2", "action": "remove", "reason": "redundant"},
        {"id": "new-1", "action": "add", "text": "…", "label": "supported"}
    ]}

Original claims keep their relative order and appear exactly once; added claims (any id that is not
an original one) may stand anywhere. Labels: the pipeline's label of a claim shown with evidence
comes from ``labels.EVIDENCE_LABELS``, of a claim without evidence from the reduced
``labels.REDUCED_LABELS``; an annotator who disagrees, and one who adds a claim, always chooses from
all five ``EVIDENCE_LABELS`` (the protocol's decision framework (a)). Agreeing is possible only when
the pipeline's label belongs to the claim's scheme (an ``unsure`` pre-label is no verdict to agree
with). Answers stored before this rule with a reduced label stay readable. Exports and statistics follow the FaStfact tool: the annotator label of a removed
claim is its removal reason, of an agreed claim the pipeline's label.

The package: ``task.py`` (the task type), ``labels.py`` (label schemes), ``serializers.py``
(payload, config and answer validation), ``spans.py`` (source highlighting), ``rows.py`` (per-claim
rows in the FaStfact tool's terms, shared by export, report and ``claim_review_stats``),
``formats.py`` (the ``fastfact`` reader and CSV decoding), ``judging.py``, ``report.py``,
``demo.py``, the ``claim_review_stats`` command, ``templates/claim_review/`` and
``static/claim_review/``. The statistics themselves are Django-free: ``metrics.claim_review``.
"""
