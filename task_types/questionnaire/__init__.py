"""Questionnaire: the survey-style study (Likert scales, choices, a slider, free text, pairwise
preference) with its questions as data in the project config, no code per study.

Config (validated by ``serializers.QuestionnaireConfigSerializer``; every error names the
question and the setting at fault)::

    {"fields": [{"name": "prompt", "label": "Prompt", "format": "text"},
                {"name": "response_a", "label": "Response A", "format": "markdown"}, …],
     "layout": "side_by_side",                # or "stacked"
     "questions": [
        {"id": "topic", "kind": "single", "prompt": "…", "options": ["health", "politics"]},
        {"id": "issues", "kind": "multiple", "prompt": "…", "options": […], "min": 0,
         "distance": "jaccard"},
        {"id": "helpful", "kind": "likert", "prompt": "…", "points": ["Not at all", …, "Very"]},
        {"id": "confidence", "kind": "slider", "prompt": "…", "min_label": "…", "max_label": "…"},
        {"id": "comment", "kind": "text", "prompt": "…", "required": false},
        {"id": "better", "kind": "pairwise", "prompt": "…", "fields": ["response_a", "response_b"],
         "allow_tie": true}]}

Every question is required unless ``"required": false`` and declares the agreement distance its
answers are compared with (``distance``; defaults: single nominal, multiple Jaccard, Likert
ordinal, slider interval, pairwise ordinal; free text has none). ``measures_for`` gives the
dashboard one alpha per question, and ``report.py`` a per-question table.

Answers are one entry per question id: an option's value (single), a list of option values in
the options' order (multiple), the point 1..n (Likert), a whole number 0–100 (slider), the text
(free text), and -1 / 0 / 1 for "the first field is better" / tie / "the second is better"
(pairwise, an ordinal scale). An optional question left unanswered is ``null``.

Items: JSONL or CSV records with an ``id`` and every configured field as text; other fields (the
system behind a response, …) are kept as provenance and never shown.

The package: ``task.py``, ``serializers.py`` (config, payload, answer), ``report.py``,
``judging.py``, ``demo.py``, and the page in ``templates/questionnaire/`` and
``static/questionnaire/``.
"""
