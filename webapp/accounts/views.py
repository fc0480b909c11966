"""Browser pages for accounts: sign-up here, log-in/log-out/password change are Django's."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import Http404
from django.shortcuts import redirect, render

from webapp.accounts.selectors import api_keys_of


def signup(request):
    if not settings.FOLIO_SIGNUP_ENABLED:
        raise Http404("Sign-up is switched off on this server; ask its administrator.")
    if request.user.is_authenticated:
        return redirect("account-home")
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("account-home")
    return render(request, "account/signup.html", {"form": form})


@login_required
def home(request):
    return render(request, "account/home.html", {"api_keys": api_keys_of(user=request.user)})
