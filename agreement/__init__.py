"""Agreement reports and the researcher dashboard: reads the database and computes the figures of
:mod:`metrics` (the Django-free metrics core) per project, cached as snapshots."""
