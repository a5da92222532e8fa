"""Crowd URLs: platform entry links, researcher quality and review pages, adjudication API."""

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
    path("p/<slug:slug>/review/", views.review_list, name="review-list"),
    path("p/<slug:slug>/review/next/", views.review_next, name="review-next"),
    path("p/<slug:slug>/review/<int:item_id>/", views.review_item, name="review-item"),
    path(
        "api/projects/<slug:slug>/review/<int:item_id>/adjudication/",
        views.AdjudicationView.as_view(),
        name="api-adjudication",
    ),
]
