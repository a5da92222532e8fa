"""Judge API: runs (list, start, progress, cancel) for researchers; pre-selection for annotators.

Security: every endpoint requires an authenticated user (session with CSRF, or token). Run
endpoints resolve the project with the researcher role (``IsProjectResearcher``: 404 otherwise)
and look runs up inside that project. The pre-selection endpoint loads only the caller's own
assignment (``own_assignment``: 404 for anyone else's) and returns only the answer fields the
judge fills: never gold, the judge's raw reply or other annotators' work.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.selectors import own_assignment
from core.errors import Refusal
from llm_judges import selectors, services
from llm_judges.models import Judge
from projects.permissions import IsProjectResearcher


class EstimateSerializer(serializers.Serializer):
    judge = serializers.CharField(help_text="The judge's name.")
    filters = serializers.DictField(required=False, default=dict)
    both_orders = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also judge every item in the task type's other presentations (ranking: the "
        "outputs reversed), in a run of its own (position bias).",
    )


class StartRunSerializer(EstimateSerializer):
    budget_calls = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=2**31 - 1
    )
    budget_tokens = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=2**31 - 1
    )


def _judge_named(project, name: str) -> Judge:
    """The project's own judge of that name (judges belong to projects)."""
    judge = selectors.judge_named(project=project, name=name)
    if judge is None:
        raise services.JudgeError("The project has no judge of that name.", field="judge")
    return judge


class RunListView(APIView):
    """The project's judge runs with progress (done / failed / total); start a run."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(operation_id="judge_runs_list", responses=dict)
    def get(self, request, slug):
        runs = selectors.runs_for_project(project=self.project)
        return Response({"results": [selectors.progress_of(run=run) for run in runs]})

    @extend_schema(
        request=StartRunSerializer,
        responses={
            201: dict,
            400: OpenApiResponse(description="No such judge, or it cannot run with these filters"),
            409: OpenApiResponse(description="The judge is already running on the project"),
        },
    )
    def post(self, request, slug):
        body = StartRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        judge = _judge_named(self.project, data["judge"])
        # A refusal (JudgeError) becomes {"detail", "code", "field"} with its code's status
        # (409 while the judge is running, 400 for a judge or filters that cannot work).
        options = {
            "judge": judge,
            "project": self.project,
            "started_by": request.user,
            "filters": data["filters"],
            "budget_calls": data["budget_calls"],
            "budget_tokens": data["budget_tokens"],
        }
        if data["both_orders"]:
            started = services.judge_run_start_both_orders(**options)
        else:
            started = [services.judge_run_start(**options)]
        progress = [
            selectors.progress_of(run=selectors.run_for_project(project=self.project, run_id=r.pk))
            for r in started
        ]
        # The run as annotators see the items; with both_orders, every run under "runs".
        body = {**progress[0], "runs": progress} if data["both_orders"] else progress[0]
        return Response(body, status=status.HTTP_201_CREATED)


class RunEstimateView(APIView):
    """What a run would cost before it starts: items, calls and (estimated) tokens. It checks
    the same body as a start, budgets included (a bad budget is a 400 here too, not an
    estimate for a run that could not start)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(
        request=StartRunSerializer,
        responses={200: dict, 400: OpenApiResponse(description="No such judge, bad filters")},
    )
    def post(self, request, slug):
        body = StartRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        return Response(
            selectors.run_estimate(
                judge=_judge_named(self.project, data["judge"]),
                project=self.project,
                filters=data["filters"],
                both_orders=data["both_orders"],
            )
        )


class RunDetailView(APIView):
    permission_classes = [IsProjectResearcher]

    @extend_schema(responses=dict)
    def get(self, request, slug, run_id):
        run = selectors.run_for_project(project=self.project, run_id=run_id)
        if run is None:
            raise Refusal("No such run.", code="not_found")
        data = selectors.progress_of(run=run)
        data["usage"] = selectors.run_usage(run=run)
        return Response(data)


class RunCancelView(APIView):
    permission_classes = [IsProjectResearcher]

    @extend_schema(request=None, responses=dict)
    def post(self, request, slug, run_id):
        run = selectors.run_for_project(project=self.project, run_id=run_id)
        if run is None:
            raise Refusal("No such run.", code="not_found")
        cancelled = services.judge_run_cancel(run=run, by=request.user)
        run = selectors.run_for_project(project=self.project, run_id=run_id)
        return Response({"cancelled": cancelled, **selectors.progress_of(run=run)})


class PreselectionView(APIView):
    """The judge's pre-selection for the caller's own assignment, recorded as shown; 204 when
    the project shows none (the default) or the judge has no answer for this item. Call it only
    when the pre-selection is actually displayed."""

    @extend_schema(request=None, responses={200: dict, 204: OpenApiResponse(description="None")})
    def post(self, request, pk):
        assignment = own_assignment(user=request.user, assignment_id=pk)
        shown = services.preselection_show(assignment=assignment)
        if shown is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(
            {"judge": shown["judge"], "answer": shown["answer"], "shown_at": shown["shown_at"]}
        )
