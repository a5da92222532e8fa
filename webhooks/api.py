"""Webhook API for a project's researchers: subscriptions, the delivery log, redelivery.

Security: researchers of the project only (``IsProjectResearcher``: 404 otherwise); every
subscription and delivery is looked up inside that project.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import Refusal
from projects.permissions import IsProjectResearcher
from webhooks import events, selectors, services
from webhooks.models import Delivery


class SubscriptionSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=2000, help_text="Where to POST the events (http(s)).")
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=list(events.EVENTS)),
        allow_empty=False,
        max_length=len(events.EVENTS) * 2,
    )
    description = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )
    is_active = serializers.BooleanField(required=False, default=True)


class SubscriptionChangeSerializer(SubscriptionSerializer):
    new_secret = serializers.BooleanField(
        required=False, default=False, help_text="Replace the secret (the old one stops at once)."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, partial=True, **kwargs)


def _subscription(view, subscription_id: int):
    subscription = selectors.subscription_of(project=view.project, subscription_id=subscription_id)
    if subscription is None:
        raise Refusal("No such webhook in this project.", code="not_found")
    return subscription


class SubscriptionListView(APIView):
    """GET: the project's webhooks (with their secrets and the event catalogue). POST: add one
    (``url``, ``events``); a URL a webhook may not reach is a 400 on ``url``."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(operation_id="webhooks_list", responses=dict)
    def get(self, request, slug):
        return Response(
            {
                "results": [
                    selectors.subscription_view(subscription=s)
                    for s in selectors.subscriptions_of(project=self.project)
                ],
                "events": events.EVENTS,
            }
        )

    @extend_schema(request=SubscriptionSerializer, responses={201: dict})
    def post(self, request, slug):
        body = SubscriptionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        subscription = services.subscription_create(
            project=self.project, user=request.user, **body.validated_data
        )
        return Response(
            selectors.subscription_view(subscription=subscription), status=status.HTTP_201_CREATED
        )


class SubscriptionView(APIView):
    """GET, PATCH (any of ``url``, ``events``, ``description``, ``is_active``, ``new_secret``)
    or DELETE one webhook (with its delivery log)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(responses=dict)
    def get(self, request, slug, subscription_id):
        subscription = _subscription(self, subscription_id)
        return Response(selectors.subscription_view(subscription=subscription))

    @extend_schema(request=SubscriptionChangeSerializer, responses=dict)
    def patch(self, request, slug, subscription_id):
        subscription = _subscription(self, subscription_id)
        body = SubscriptionChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        subscription = services.subscription_update(
            subscription=subscription, **body.validated_data
        )
        return Response(selectors.subscription_view(subscription=subscription))

    @extend_schema(responses={204: None})
    def delete(self, request, slug, subscription_id):
        services.subscription_delete(subscription=_subscription(self, subscription_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListView(APIView):
    """The delivery log, newest first (at most 200; ``?status=`` narrows it)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(responses=dict)
    def get(self, request, slug):
        wanted = request.query_params.get("status", "")
        if wanted and wanted not in Delivery.Status.values:
            raise Refusal(
                f"Unknown status; choose among {', '.join(Delivery.Status.values)}.",
                field="status",
            )
        rows = selectors.deliveries_of(project=self.project, status=wanted)[:200]
        return Response({"results": [selectors.delivery_view(delivery=d) for d in rows]})


class RedeliverView(APIView):
    """Send a delivery again now, with the same id and payload (409 while one is sending)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(request=None, responses={202: dict})
    def post(self, request, slug, delivery_id):
        delivery = selectors.delivery_of(project=self.project, delivery_id=delivery_id)
        if delivery is None:
            raise Refusal("No such delivery in this project.", code="not_found")
        delivery = services.delivery_redeliver(delivery=delivery)
        return Response(selectors.delivery_view(delivery=delivery), status=status.HTTP_202_ACCEPTED)
