"""``/account/keys/``: create (shown once) and revoke API keys."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts import selectors as account_selectors
from webapp.accounts import services as account_services
from webapp.ui.forms import ApiKeyForm


@login_required
def api_keys(request):
    form = ApiKeyForm(request.POST or None)
    issued = None
    if request.method == "POST" and form.is_valid():
        # Shown in this answer only: the key is stored as a digest and never shown again.
        issued = account_services.api_key_create(user=request.user, name=form.cleaned_data["name"])
        form = ApiKeyForm()
    context = {
        "form": form,
        "issued": issued,
        "api_keys": account_selectors.api_keys_of(user=request.user),
    }
    return render(request, "account/keys.html", context)


@login_required
@require_POST
def api_key_revoke(request, key_id: int):
    if not account_services.api_key_revoke_owned(user=request.user, key_id=key_id):
        raise Http404("There is no such key in your account.")
    messages.success(request, "The key was revoked; programs using it are refused from now on.")
    return redirect("ui-keys")
