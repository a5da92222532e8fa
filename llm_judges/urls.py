from django.urls import path

from llm_judges import api, views

urlpatterns = [
    path("api/projects/<slug:slug>/judge-runs/", api.RunListView.as_view(), name="api-judge-runs"),
    path(
        "api/projects/<slug:slug>/judge-runs/estimate/",
        api.RunEstimateView.as_view(),
        name="api-judge-run-estimate",
    ),
    path(
        "api/projects/<slug:slug>/judge-runs/<int:run_id>/",
        api.RunDetailView.as_view(),
        name="api-judge-run",
    ),
    path(
        "api/projects/<slug:slug>/judge-runs/<int:run_id>/cancel/",
        api.RunCancelView.as_view(),
        name="api-judge-run-cancel",
    ),
    path(
        "api/assignments/<int:pk>/preselection/",
        api.PreselectionView.as_view(),
        name="api-preselection",
    ),
    path("p/<slug:slug>/judges/", views.project_judges, name="project-judges"),
    path(
        "p/<slug:slug>/judges/sampling-weights/",
        views.sampling_weights,
        name="project-sampling-weights",
    ),
    path("p/<slug:slug>/judges/runs/<int:run_id>/", views.judge_run, name="judge-run"),
]
