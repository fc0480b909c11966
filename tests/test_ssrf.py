"""The SSRF guard judges the address a connection really reaches: IPv6 addresses that carry
an IPv4 address (NAT64, 6to4, IPv4-compatible, IPv4-mapped) are judged by it, and special
ranges that Python calls global are refused. IPv6 literals work in ``GET /<url>``."""

from __future__ import annotations

import ipaddress

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.document_server import document_server
from webapp.core.ssrf import AddressPolicy, is_public
from webapp.jobs.models import Job

INTERNAL = [
    "64:ff9b::a9fe:a9fe",  # NAT64 spelling of the metadata address 169.254.169.254
    "64:ff9b::7f00:1",  # NAT64 127.0.0.1
    "64:ff9b:1::a00:1",  # NAT64's local-use prefix
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::",  # 6to4 of the metadata address
    "::7f00:1",  # IPv4-compatible ::127.0.0.1
    "::a00:1",  # IPv4-compatible ::10.0.0.1
    "::ffff:10.0.0.1",  # IPv4-mapped
    "fec0::1",  # site-local (deprecated, still routed inside some networks)
    "192.0.0.9",  # IETF protocol assignments
    "192.0.0.170",
    "192.88.99.1",  # 6to4 relay anycast
    "198.18.0.1",  # benchmarking
    "2001::1",  # Teredo
    "0.0.0.0",
    "::",
]
PUBLIC = ["8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"]


@pytest.mark.parametrize("address", INTERNAL)
def test_an_internal_address_in_any_spelling_is_not_public(address):
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_a_public_address_stays_public_whatever_it_is_wrapped_in(address):
    assert is_public(ipaddress.ip_address(address))


def test_an_allowed_network_also_allows_its_addresses_spelled_in_ipv6():
    policy = AddressPolicy.from_setting(["127.0.0.1"])

    policy.check("example", ipaddress.ip_address("::ffff:127.0.0.1"))  # no exception


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
        "http://[2002:a9fe:a9fe::]/latest/meta-data/",
        "http://[::127.0.0.1]/",
        "http://[fec0::1]/",
        "http://192.0.0.9/",
    ],
)
def test_an_internal_address_is_a_451_through_post_and_get(api, url):
    posted = api.post("/", {"url": url}, format="json")
    got = api.get(f"/{url}")

    for response in (posted, got):
        assert response.status_code == 451, response.content
        assert response.json()["status"] == 45102
        assert "FOLIO_SSRF_ALLOW" in response.json()["message"]  # how a private one is opened
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_an_ipv6_literal_in_the_path_is_fetched():
    with document_server() as base_url, override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"]):
        port = base_url.rsplit(":", 1)[1]
        response = APIClient().get(
            f"/http://[::ffff:127.0.0.1]:{port}/report.pdf",
            HTTP_PREFER="respond-async",
            HTTP_ACCEPT="application/json",
        )

    assert response.status_code == 202, response.content
    assert Job.objects.get().document.page_count == 3
