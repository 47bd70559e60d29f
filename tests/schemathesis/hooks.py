"""Schemathesis hooks for chronoscope (loaded through `hooks` in schemathesis.toml).

An Idempotency-Key is one per request a client means to make once: a repeat with the same key
and a different request is refused (422, /problems/idempotency-key-reused), as documented and
as tests/http_idempotency.rs checks. Generated keys repeat ("0", "A", ...) across unrelated
requests, so every well-formed generated key is replaced by a fresh one just before the call;
malformed keys (the negative cases) are sent as generated.
"""

import re
import uuid

import schemathesis

_WELL_FORMED = re.compile(r"^[!-~]{1,255}$")


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key":
            value = headers[name]
            if isinstance(value, str) and _WELL_FORMED.match(value):
                headers[name] = str(uuid.uuid4())
