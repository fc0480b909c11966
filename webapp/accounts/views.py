"""Browser pages for accounts: sign-up here, log-in/log-out/password change are Django's."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from webapp.accounts.invites import invite_username
from webapp.accounts.login_throttle import BACKEND, login_locked
from webapp.accounts.selectors import api_keys_of


def signup(request):
    """FOLIO_SIGNUP: ``open`` (anyone), ``invite`` (with a link from ``manage.py invite``,
    for the username it names) or ``closed`` (a 404)."""
    mode = settings.FOLIO_SIGNUP
    token = request.GET.get("invite", "")
    invited = invite_username(token) if mode == "invite" else None
    if mode == "closed":
        raise Http404("Sign-up is switched off on this server; ask its administrator.")
    if mode == "invite" and invited is None:
        return _by_invitation(request, had_link=bool(token))
    if request.user.is_authenticated:
        return redirect("account-home")
    data = request.POST.copy() if request.method == "POST" else None
    if data is not None and invited is not None:
        data["username"] = invited  # the invitation names the account it makes
    initial = {"username": invited} if invited else None
    form: UserCreationForm[User] = UserCreationForm(data, initial=initial)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend=BACKEND)
        return redirect("account-home")
    return render(request, "account/signup.html", {"form": form})


def _by_invitation(request, *, had_link: bool):
    """What a visitor without a valid invitation is told: how to get one (a 403, not a
    page that says nothing is here)."""
    days = settings.FOLIO_INVITE_DAYS
    if had_link:
        title = "This invitation link does not work"
        message = (
            f"It is not a link this server made, or it is older than {days} days, the time an "
            "invitation lasts. Ask the administrator of this server for a new one."
        )
    else:
        title = "Sign-up is by invitation"
        message = (
            "This server creates accounts only from an invitation link. Ask its administrator "
            f"for one: they make it with `manage.py invite USERNAME`; it creates that account "
            f"and works for {days} days."
        )
    context = {"title": title, "message": message, "back": reverse("login")}
    return render(request, "error.html", context, status=403)


class LoginView(auth_views.LoginView):
    """Django's log-in page, saying so (a 429) while failed log-ins lock the account or the
    address out (webapp/accounts/login_throttle.py)."""

    template_name = "account/login.html"

    def post(self, request, *args, **kwargs):
        if login_locked(request, request.POST.get("username", "")):
            # Unbound: binding it would check the password, and count another failure.
            form = self.get_form_class()(request)
            form.cleaned_data = {}  # what add_error expects of a form it adds errors to
            form.add_error(
                None,
                "Too many failed log-ins for this account or from this address; try again in "
                f"{settings.FOLIO_LOGIN_LOCKOUT_SECONDS // 60} minutes.",
            )
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)


@login_required
def home(request):
    return render(request, "account/home.html", {"api_keys": api_keys_of(user=request.user)})
