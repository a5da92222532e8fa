"""Webhook URLs: the project's API and its page (included at the root by config/urls.py)."""

from django.urls import path

from webhooks import api, views

urlpatterns = [
    path(
        "api/projects/<slug:slug>/webhooks/",
        api.SubscriptionListView.as_view(),
        name="api-webhooks",
    ),
    path(
        "api/projects/<slug:slug>/webhooks/deliveries/",
        api.DeliveryListView.as_view(),
        name="api-webhook-deliveries",
    ),
    path(
        "api/projects/<slug:slug>/webhooks/deliveries/<int:delivery_id>/redeliver/",
        api.RedeliverView.as_view(),
        name="api-webhook-redeliver",
    ),
    path(
        "api/projects/<slug:slug>/webhooks/<int:subscription_id>/",
        api.SubscriptionView.as_view(),
        name="api-webhook",
    ),
    path("p/<slug:slug>/webhooks/", views.webhooks_page, name="project-webhooks"),
    path(
        "p/<slug:slug>/webhooks/<int:subscription_id>/change/",
        views.subscription_change,
        name="project-webhook-change",
    ),
    path(
        "p/<slug:slug>/webhooks/deliveries/<int:delivery_id>/redeliver/",
        views.redeliver,
        name="project-webhook-redeliver",
    ),
]
