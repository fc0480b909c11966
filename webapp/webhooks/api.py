"""Webhook endpoints (register, change, rotate the secret, remove), their delivery log, a
job's delivery log, and redelivery."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, Throttled
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.core.errors import bad_parameter, conflict
from webapp.core.schema import results_of
from webapp.jobs import selectors as job_selectors
from webapp.webhooks import selectors, services
from webapp.webhooks.serializers import (
    DeliverySerializer,
    EndpointCreateSerializer,
    EndpointSerializer,
    EndpointUpdateSerializer,
    EndpointWithSecretSerializer,
)

DELIVERY_LOG_LIMIT = 100


def _owned_endpoint(request, endpoint_id):
    endpoint = selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id)
    if endpoint is None:
        raise NotFound(f"No webhook endpoint {endpoint_id} here.")
    return endpoint


class EndpointListCreateView(APIView):
    @extend_schema(operation_id="v1_webhooks_list", responses={200: results_of(EndpointSerializer)})
    def get(self, request):
        endpoints = selectors.endpoints_of(owner=request.user)
        return Response({"results": EndpointSerializer(endpoints, many=True).data})

    @extend_schema(request=EndpointCreateSerializer, responses={201: EndpointWithSecretSerializer})
    def post(self, request):
        serializer = EndpointCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            endpoint = services.endpoint_create(owner=request.user, **serializer.validated_data)
        except services.WebhookError as exc:
            raise bad_parameter(str(exc)) from exc
        # The secret is shown here and at rotation only, never in lists or reads.
        return Response(EndpointWithSecretSerializer(endpoint).data, status=status.HTTP_201_CREATED)


class EndpointDetailView(APIView):
    @extend_schema(responses={200: EndpointSerializer})
    def get(self, request, endpoint_id):
        return Response(EndpointSerializer(_owned_endpoint(request, endpoint_id)).data)

    @extend_schema(request=EndpointUpdateSerializer, responses={200: EndpointSerializer})
    def patch(self, request, endpoint_id):
        endpoint = _owned_endpoint(request, endpoint_id)
        serializer = EndpointUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            endpoint = services.endpoint_update(endpoint=endpoint, **serializer.validated_data)
        except services.WebhookError as exc:
            raise bad_parameter(str(exc)) from exc
        return Response(EndpointSerializer(endpoint).data)

    @extend_schema(responses={204: None})
    def delete(self, request, endpoint_id):
        _owned_endpoint(request, endpoint_id).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointRotateSecretView(APIView):
    @extend_schema(request=None, responses={200: EndpointWithSecretSerializer})
    def post(self, request, endpoint_id):
        endpoint = services.endpoint_rotate_secret(endpoint=_owned_endpoint(request, endpoint_id))
        return Response(EndpointWithSecretSerializer(endpoint).data)


class EndpointDeliveriesView(APIView):
    @extend_schema(responses={200: results_of(DeliverySerializer)})
    def get(self, request, endpoint_id):
        endpoint = _owned_endpoint(request, endpoint_id)
        deliveries = selectors.deliveries_of(owner=request.user).filter(endpoint=endpoint)
        data = DeliverySerializer(deliveries[:DELIVERY_LOG_LIMIT], many=True).data
        return Response({"results": data})


class JobDeliveriesView(APIView):
    @extend_schema(responses={200: results_of(DeliverySerializer)})
    def get(self, request, job_id):
        job = job_selectors.job_get(owner=request.user, job_id=job_id)
        if job is None:
            raise NotFound(f"No job {job_id} here.")
        deliveries = selectors.deliveries_of(owner=request.user).filter(job=job)
        data = DeliverySerializer(deliveries[:DELIVERY_LOG_LIMIT], many=True).data
        return Response({"results": data})


class DeliveryDetailView(APIView):
    @extend_schema(responses={200: DeliverySerializer})
    def get(self, request, delivery_id):
        delivery = selectors.delivery_get(owner=request.user, delivery_id=delivery_id)
        if delivery is None:
            raise NotFound(f"No delivery {delivery_id} here.")
        return Response(DeliverySerializer(delivery).data)


class DeliveryRedeliverView(APIView):
    @extend_schema(request=None, responses={202: DeliverySerializer})
    def post(self, request, delivery_id):
        delivery = selectors.delivery_get(owner=request.user, delivery_id=delivery_id)
        if delivery is None:
            raise NotFound(f"No delivery {delivery_id} here.")
        try:
            copy = services.delivery_redeliver(delivery=delivery)
        except services.RedeliveryPending as exc:
            raise conflict(str(exc)) from exc
        except services.RedeliveryThrottled as exc:
            raise Throttled(wait=exc.retry_after, detail=str(exc)) from exc
        except services.WebhookError as exc:
            raise bad_parameter(str(exc)) from exc
        return Response(DeliverySerializer(copy).data, status=status.HTTP_202_ACCEPTED)
