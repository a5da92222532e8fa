"""Running a study: the researcher's project pages and API, imports and exports, demo projects.

The top app: it may import every other app; none imports it.
"""
