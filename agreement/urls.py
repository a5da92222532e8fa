"""Agreement pages, included under ``p/<slug>/agreement/`` by config/urls.py."""

from django.urls import path

from agreement import views

urlpatterns = [
    path("", views.dashboard, name="agreement-dashboard"),
    path("judges/", views.judge_validation, name="agreement-judge-validation"),
    path("compare/", views.compare, name="agreement-compare"),
    path("compare/published/", views.compare_published, name="agreement-compare-published"),
]
