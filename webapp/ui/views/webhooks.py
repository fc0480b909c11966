"""``/account/webhooks/``: endpoints (secret shown once, rotate, test event, enable or
disable, remove) and their delivery log."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.ui.forms import EndpointForm
from webapp.webhooks import selectors as webhook_selectors
from webapp.webhooks import services as webhook_services

DELIVERIES_SHOWN = 50


def _owned_endpoint(request, endpoint_id):
    endpoint = webhook_selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id)
    if endpoint is None:
        raise Http404("There is no such webhook endpoint in your account.")
    return endpoint


@login_required
def webhooks(request):
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = webhook_services.endpoint_create(owner=request.user, **form.cleaned_data)
        except webhook_services.WebhookError as exc:
            form.add_error("url", str(exc))
        else:
            return _endpoint_page(request, endpoint, new_secret=True)
    context = {"form": form, "endpoints": webhook_selectors.endpoints_of(owner=request.user)}
    return render(request, "account/webhooks.html", context, status=400 if form.errors else 200)


def _endpoint_page(request, endpoint, *, new_secret: bool = False, status: int = 200):
    deliveries = webhook_selectors.deliveries_of(owner=request.user).filter(endpoint=endpoint)
    context = {
        "endpoint": endpoint,
        "new_secret": endpoint.secret if new_secret else "",
        "deliveries": deliveries[:DELIVERIES_SHOWN],
        "rotation_hours": settings.FOLIO_WEBHOOK_ROTATION_HOURS,
    }
    return render(request, "account/webhook.html", context, status=status)


@login_required
def webhook_detail(request, endpoint_id):
    return _endpoint_page(request, _owned_endpoint(request, endpoint_id))


@login_required
@require_POST
def webhook_rotate(request, endpoint_id):
    endpoint = webhook_services.endpoint_rotate_secret(
        endpoint=_owned_endpoint(request, endpoint_id)
    )
    return _endpoint_page(request, endpoint, new_secret=True)


@login_required
@require_POST
def webhook_test(request, endpoint_id):
    endpoint = _owned_endpoint(request, endpoint_id)
    try:
        webhook_services.endpoint_test_send(endpoint=endpoint)
    except webhook_services.WebhookError as exc:
        messages.error(request, f"No test event was sent: {exc}.")
    else:
        messages.success(request, "A test event is on its way; its delivery is logged below.")
    return redirect("ui-webhook", endpoint_id=endpoint.pk)


@login_required
@require_POST
def webhook_toggle(request, endpoint_id):
    endpoint = _owned_endpoint(request, endpoint_id)
    enable = endpoint.disabled_at is not None
    webhook_services.endpoint_update(endpoint=endpoint, enabled=enable)
    messages.success(request, "Endpoint enabled." if enable else "Endpoint disabled.")
    return redirect("ui-webhook", endpoint_id=endpoint.pk)


@login_required
@require_POST
def webhook_delete(request, endpoint_id):
    endpoint = _owned_endpoint(request, endpoint_id)
    endpoint.delete()
    messages.success(request, f"The endpoint {endpoint.url} was removed.")
    return redirect("ui-webhooks")


@login_required
@require_POST
def delivery_redeliver(request, delivery_id):
    delivery = webhook_selectors.delivery_get(owner=request.user, delivery_id=delivery_id)
    if delivery is None:
        raise Http404("There is no such delivery in your account.")
    try:
        webhook_services.delivery_redeliver(delivery=delivery)
    except webhook_services.WebhookError as exc:
        messages.error(request, f"Not sent again: {exc}.")
    else:
        messages.success(request, "The event is being sent again (same webhook-id).")
    return redirect("ui-webhook", endpoint_id=delivery.endpoint_id)
