#!/usr/bin/env python3
"""Plays the user's browser for revolve's OAuth tests
(tests/e2e/mcp_oauth.rs): GETs the authorization URL and follows its
redirect to revolve's loopback listener, as a browser whose user said yes.
With OAUTH_TEST_TAMPER_STATE set, the URL's `state` is changed first (a
redirect revolve did not start). What the listener answered (its status
and page) is appended to OAUTH_TEST_BROWSER_LOG when set.
Usage: browser.py URL
"""
import os
import sys
import urllib.error
import urllib.request
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

url = sys.argv[1]
if os.environ.get("OAUTH_TEST_TAMPER_STATE"):
    parts = urlsplit(url)
    query = [(k, "not-the-state" if k == "state" else v) for k, v in parse_qsl(parts.query)]
    url = urlunsplit(parts._replace(query=urlencode(query)))
try:
    with urllib.request.urlopen(url, timeout=30) as answer:
        result = "%d %s" % (answer.status, answer.read().decode())
except urllib.error.HTTPError as e:
    result = "%d %s" % (e.code, e.read().decode())
if os.environ.get("OAUTH_TEST_BROWSER_LOG"):
    with open(os.environ["OAUTH_TEST_BROWSER_LOG"], "a") as f:
        f.write(result.strip() + "\n")
