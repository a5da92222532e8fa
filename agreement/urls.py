"""Agreement pages, included under ``p/<slug>/agreement/`` by config/urls.py."""

from django.urls import path

from agreement import views

urlpatterns = [
    path("", views.dashboard, name="agreement-dashboard"),
    path("compare/", views.compare, name="agreement-compare"),
]
