"""What a study file says beyond the project's own fields: the judges it runs."""

from django.db import models


class StudyJudge(models.Model):
    """A judge a project's study file names (``judges:``). Judges are shared by every project
    (``llm_judges.Judge``); this link says which ones a study uses, so that exporting the study
    file gives them back even before they have run."""

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="study_judges"
    )
    judge = models.ForeignKey(
        "llm_judges.Judge", on_delete=models.CASCADE, related_name="study_links"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "judge"], name="studyjudge_unique")
        ]

    def __str__(self) -> str:
        return f"{self.judge_id} in {self.project_id}"
