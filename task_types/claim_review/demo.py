"""Demo: claim review (FaStfact protocol) on the two samples of FaStfact's trial file."""

from pathlib import Path

from django.conf import settings

from studies.demos import load_demo_project, register

DATA = Path(settings.BASE_DIR) / "data" / "fastfact"

GUIDELINES = """\
## Your task
A factuality pipeline split a model's answer into **atomic claims** and checked each claim against
evidence it searched. You correct both steps.

**Step 1 – Revise claims.** For every extracted claim:
- **Keep** it (key `k`) when it is one verifiable fact stated in the response;
- **Revise** it (key `r`) when it is ambiguous or depends on context (pronouns, missing time or
  place): rewrite it so it stands on its own, without changing what the response says;
- **Remove** it (key `x`) and give the reason: **redundant** (its meaning repeats another claim) or
  **not a claim** (opinion, advice, hypothetical, prediction, personal story…).
- **Add claim here** inserts a claim the extractor missed, at its place in the response's order.

Select a claim to highlight the sentence of the response it most likely comes from.

**Step 2 – Verify claims.** For every kept, revised or added claim, read the system's label, its
reasoning and the evidence passages (click a passage to open it), then **agree** (`a`) or
**disagree** (`d`) and choose the correct label (`1`–`5`):
- *supported*: everything in the claim is supported and nothing is contradicted;
- *refuted*: part of the claim is contradicted and no evidence supports that part;
- *conflicting evidence*: different passages support and contradict the claim;
- *not enough evidence*: the passages do not say enough to decide;
- *irrelevant*: the claim has nothing to do with the question.

For claims shown without evidence the system says only *supported* / *unsupported* /
*irrelevant*; when you disagree, and for the claims you added, choose from all five labels above,
using **Search** to look them up on the web. With evidence, judge on the evidence only.

Every claim needs a decision before you can submit (**Enter**).
"""


def create(*, researcher, annotators) -> str:
    return load_demo_project(
        slug="claim-review-fastfact",
        defaults={
            "name": "Claim review · FaStfact trial",
            "task_type": "claim_review",
            "config": {"search_url": "https://www.google.com/search?q={query}"},
            "guidelines": GUIDELINES,
        },
        researcher=researcher,
        annotators=annotators,
        open_items=lambda: open(DATA / "trial.jsonl", "rb"),
        fmt="fastfact",
    )


register(name="claim_review", task_type="claim_review", create=create)
