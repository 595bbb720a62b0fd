"""What `judge --model api:...` does between launch and its first request (issue 35 item 4): no work twice."""

from __future__ import annotations

import ssl

import openai

from tui_rater.judge.backends import http_limits


def test_the_api_client_loads_the_ca_bundle_once_and_still_verifies(monkeypatch):
    """The deadline transport built httpx's default pool (a TLS context: the CA bundle read and parsed) and then
    its own with a second one: a tenth of a second of the launch on a loaded machine. One context serves both."""
    _, httpcore = http_limits._modules(openai)
    made: list[ssl.SSLContext] = []
    real = httpcore.default_ssl_context

    def counted(*args, **kwargs):  # the library's own context, counted
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(httpcore, "default_ssl_context", counted)
    client = http_limits.http_client(openai, 10.0)
    try:
        assert len(made) == 1
        context = client._transport._pool._ssl_context
        assert context is made[0]
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        assert context.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded: servers are verified
    finally:
        client.close()
