"""The reads typed as TypedDicts (issue 25) return exactly the keys their types declare, so a
key added to a read without its type (or the reverse) fails here rather than in a template."""

import pytest

from agreement import selectors as agreement_selectors
from annotation import selectors, services
from crowd import selectors as crowd_selectors
from llm_judges import selectors as judge_selectors
from tests import factories


def keys(typed) -> set[str]:
    return set(typed.__required_keys__) | set(typed.__optional_keys__)


def required(typed) -> set[str]:
    return set(typed.__required_keys__)


@pytest.fixture
def dealt(db):
    project = factories.ProjectFactory()
    factories.make_items(project, 2)
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator")
    assignment = services.assignment_next(project=project, annotator=user)
    return project, user, assignment


def test_the_annotation_reads_return_the_keys_of_their_types(dealt):
    project, user, assignment = dealt
    view = selectors.assignment_view(assignment=assignment)
    assert set(view) == keys(selectors.AssignmentView)
    assert set(selectors.annotator_counts(project=project, user=user)) == keys(
        selectors.AnnotatorCounts
    )
    assert set(selectors.project_counts(project=project)) == keys(selectors.ProjectCounts)
    progress = selectors.project_progress(project=project)
    assert set(progress) == keys(selectors.ProjectProgress)
    assert set(progress["annotators"][0]) == keys(selectors.AnnotatorProgress)
    dashboard = agreement_selectors.dashboard_progress(project=project)
    assert set(dashboard) == keys(agreement_selectors.DashboardProgress)
    assert set(dashboard["annotators"][0]) == keys(agreement_selectors.DashboardAnnotator)


def test_the_crowd_and_judge_reads_return_the_keys_of_their_types(dealt):
    project, _, _ = dealt
    overview = crowd_selectors.quality_overview(project=project)
    assert set(overview) == keys(crowd_selectors.QualityOverview)
    assert set(overview["annotators"][0]) == keys(crowd_selectors.AnnotatorQuality)
    assert list(crowd_selectors.PaymentRow.__annotations__) == crowd_selectors.PAYMENT_COLUMNS
    status = judge_selectors.preselection_status(project=project)
    assert set(status) == keys(judge_selectors.PreselectionStatus)


def test_a_run_s_progress_has_the_keys_of_its_type(dealt, settings):
    from llm_judges import services as judge_services
    from llm_judges.models import Judge

    project, _, _ = dealt
    judge = judge_services.judge_create(
        project=project, name="nli-judge", kind=Judge.Kind.NLI, model="m", parameters={}
    )
    run = judge_services.judge_run_start(judge=judge, project=project, enqueue=False)
    progress = judge_selectors.progress_of(
        run=judge_selectors.run_for_project(project=project, run_id=run.pk)
    )
    # lost_after_seconds only while the run is active
    assert (
        required(judge_selectors.RunProgress) <= set(progress) <= keys(judge_selectors.RunProgress)
    )
    estimate = judge_selectors.run_estimate(judge=judge, project=project)
    assert set(estimate) == keys(judge_selectors.RunEstimate)
