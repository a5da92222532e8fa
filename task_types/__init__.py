"""Task types: one package per task type, each a Django app holding everything that differs
between task types — ``task.py`` (the :class:`annotation.task_types.TaskType` subclass),
``formats.py`` (import readers), ``judging.py`` (judge prompts and parsers), ``report.py``
(dashboard section), ``demo.py``, ``templates/<slug>/``, ``static/<slug>/`` and its own helpers.
See ``docs/architecture.md`` for adding one."""
