"""Crowd URLs: platform entry links, the researcher's quality, platform-action and payment pages
(review and adjudication serve every project: ``config.urls``, ``annotation.review_views``)."""

from django.urls import path

from crowd import views

urlpatterns = [
    path("crowd/<slug:slug>/prolific/", views.prolific_entry, name="crowd-prolific"),
    path("crowd/<slug:slug>/mturk/", views.mturk_entry, name="crowd-mturk"),
    path("crowd/start/<str:token>/", views.crowd_start, name="crowd-start"),
    path("crowd/<slug:slug>/finish/", views.crowd_finish, name="crowd-finish"),
    path("p/<slug:slug>/quality/", views.quality_page, name="crowd-quality"),
    path("p/<slug:slug>/quality/payments.csv", views.payments_csv, name="crowd-payments"),
    path("p/<slug:slug>/quality/actions/", views.platform_actions_page, name="crowd-actions"),
]
