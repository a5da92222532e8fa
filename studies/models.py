"""Studies keep no tables of their own: a study file's judges are the project's own judges
(``llm_judges.Judge.project``)."""
