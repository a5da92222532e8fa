"""Citation recovery (Xing, Baldwin & Lau): find the explanation sentences that should cite a
highlighted evidence passage whose citation markers were masked, or say that none should; rate the
explanation's helpfulness 0–100.

Sentence indices are 0-based everywhere in storage and exports (the file format's ``ans_sens`` is
0-based too); the UI shows them 1-based.

The package: ``task.py`` (the task type: preparation and masking, display, scores, export),
``serializers.py`` (payload, config, answer), ``formats.py`` (the Transparent-FCExp release files
and the CSV columns), ``citations.py`` (parsing and removing inline citation markers),
``judging.py`` (LLM, NLI and embedding judges), ``report.py`` (the dashboard section),
``demo.py`` (the GPT-4 demo project and the crowd pilot of ``demo_crowd_pilot.py``), and the
annotation page in ``templates/citation_recovery/`` and ``static/citation_recovery/``.
"""
