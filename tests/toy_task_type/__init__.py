"""A toy task type, "yes_no": is the statement true? The proof that a task type is one package.

Nothing outside this folder names it: ``tests/test_toy_task_type.py`` installs the package as a
Django app for one test and walks it through registration, the system check, the annotation API,
the agreement report and the export.
"""
