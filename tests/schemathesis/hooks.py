"""Schemathesis hooks for chronoscope (loaded through `hooks` in schemathesis.toml).

An Idempotency-Key is one per request a client means to make once: a repeat with the same key
and a different request is refused (422, /problems/idempotency-key-reused), as documented and
as tests/http_idempotency.rs checks. Generated keys repeat ("0", "A", ...) across unrelated
requests, so every well-formed generated key is replaced by a fresh one just before the call;
malformed keys (the negative cases) are sent as generated.

The event streams describe their body as text (`schema: {type: string}`, so generated clients
do not parse it as JSON) and name one event's shape in `x-itemSchema`: OpenAPI 3.2's
`itemSchema`, which a 3.1 document may carry only as an extension. Schemathesis reads
`itemSchema` and checks each event against it, so the loaded description gets it under that name.
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


@schemathesis.hook
def before_load_schema(context, raw_schema):
    for item in (raw_schema.get("paths") or {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for response in (operation.get("responses") or {}).values():
                media = (response.get("content") or {}).get("text/event-stream")
                if isinstance(media, dict) and "x-itemSchema" in media:
                    media["itemSchema"] = media.pop("x-itemSchema")
                    # With `itemSchema`, `schema` covers the whole stream: the events, not text.
                    media.pop("schema", None)
