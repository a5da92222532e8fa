"""The reports layer: reads a project's answers into plain structures and feeds the core.

Plain part (no Django): :mod:`.inputs` (what a report is computed from), :mod:`.generic` (alpha
per answer field), :mod:`.task_types` (one module per task type), :mod:`.build` (assembly and
the comparison of two reports), :mod:`.tables` and :mod:`.plots` (rendering), :mod:`.page` (the
dashboard page stored with a snapshot). Django part:
:mod:`.gather` (selectors that build a :class:`ReportInput` from the database).
"""

from .build import REPORT_VERSION, build_report, compare_reports
from .inputs import AnnotatorFilter, CoderInfo, ItemInfo, ReportInput, ReportOptions

__all__ = [
    "REPORT_VERSION",
    "AnnotatorFilter",
    "CoderInfo",
    "ItemInfo",
    "ReportInput",
    "ReportOptions",
    "build_report",
    "compare_reports",
]
