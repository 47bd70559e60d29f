"""Drives every operation of chronoscope's served description through a Python client
generated from it by openapi-python-client (tests/client-gen/run.sh), as a team integrating the
service would: bodies built with the generated models, calls made with the generated
functions, answers read from what they parse.

Every operation is called twice, in its default view and with `view=full` (the open and the
unsupported operations too), and each answer is checked:
- the status is the one expected (2xx, or the documented 501 problem of the two operations the
  service does not support);
- it parsed into the model the description names for that status and view (a view's
  documented projection by default, its full type with `view=full`);
- nothing of it was left untyped: no model holds a member in `additional_properties` (free-form
  objects aside, whose members are all additional by design), and the parsed model written back
  (`to_dict`) is the JSON the server sent, so nothing was lost or mistyped.
The two event streams are read as streams: the first event, parsed into the generated event
model and its data into the model the description names for it.

Usage: smoke.py --base URL --token TOKEN --spec openapi.json --package NAME (the generated
package must be importable). Prints one line per failure and a summary; exits 1 on failure.
"""

import argparse
import datetime
import enum
import importlib
import inspect
import json
import pkgutil
import re
import sys
import types
import typing
import uuid

import httpx

ARGS = None
SPEC = None
PKG = None
CLIENT = None
MODULES = {}  # operationId -> generated module
FAILURES = []
CALLS = 0
CHECKED_TYPED = 0


def snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def load_modules():
    api = importlib.import_module(f"{PKG.__name__}.api")
    by_name = {}
    for info in pkgutil.walk_packages(api.__path__, api.__name__ + "."):
        if not info.ispkg:
            by_name[info.name.rsplit(".", 1)[1]] = info.name
    for path, item in SPEC["paths"].items():
        for method, op in item.items():
            op_id = op["operationId"]
            module = by_name.get(snake(op_id))
            if module is None:
                FAILURES.append(f"{op_id}: no generated function ({method.upper()} {path})")
                continue
            MODULES[op_id] = (importlib.import_module(module), path, method, op)


def model_class(annotation):
    """The generated model class in a parameter annotation (`X`, `X | Unset`, ...)."""
    if inspect.isclass(annotation) and hasattr(annotation, "from_dict"):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_class(arg)
        if found is not None:
            return found
    return None


def enum_class(annotation):
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return annotation
    for arg in typing.get_args(annotation):
        found = enum_class(arg)
        if found is not None:
            return found
    return None


def takes(annotation, cls):
    return annotation is cls or any(takes(a, cls) for a in typing.get_args(annotation))


def kwargs_for(op_id, view, body=None, **params):
    """The generated function's arguments: `body` (a dict) becomes its model, `view` its enum,
    enum parameters their enum."""
    module = MODULES[op_id][0]
    signature = inspect.signature(module.sync_detailed)
    kwargs = {}
    if body is not None:
        cls = model_class(signature.parameters["body"].annotation)
        if cls is None:
            raise AssertionError(f"{op_id}: no model for its body")
        kwargs["body"] = cls.from_dict(body)
    if view == "full":
        kwargs["view"] = enum_class(signature.parameters["view"].annotation)("full")
    for name, value in params.items():
        parameter = signature.parameters.get(name)
        if parameter is None:
            raise AssertionError(f"{op_id}: no parameter {name} in {list(signature.parameters)}")
        cls = enum_class(parameter.annotation)
        if cls is not None and not isinstance(value, enum.Enum):
            value = cls(value)
        elif isinstance(value, str) and takes(parameter.annotation, datetime.datetime):
            value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        kwargs[name] = value
    return kwargs


# --- what the description says an answer is ---------------------------------------------

def component(ref):
    return ref.rsplit("/", 1)[1]


def expected_shape(op, status, view):
    """('model', Name) / ('list', Name) / ('none', None) / ('any', None) for the answer."""
    response = op["responses"].get(str(status))
    if response is None:
        return ("undocumented", None)
    content = response.get("content")
    if not content:
        return ("none", None)
    media, media_object = next(iter(content.items()))
    schema = media_object.get("schema") or {}
    if media.startswith("text/"):
        return ("text", None)
    if "$ref" in schema:
        name = component(schema["$ref"])
        target = SPEC["components"]["schemas"][name]
        if name.endswith("View") and "anyOf" in target:
            full, documented = target["anyOf"]
            chosen = full if view == "full" else documented
            if "items" in chosen:
                return ("list", component(chosen["items"]["$ref"]))
            return ("model", component(chosen["$ref"]))
        return ("model", name)
    if schema.get("type") == "array" and "$ref" in schema.get("items", {}):
        return ("list", component(schema["items"]["$ref"]))
    return ("any", None)


# --- checking a parsed answer against the JSON sent -----------------------------------------

DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def as_instant(text):
    """A date-time string as an aware datetime, to the microsecond (what Python keeps)."""
    match = DATE_TIME.match(text)
    if not match:
        return None
    fraction = match.group(1) or ""
    text = text.replace(fraction, (fraction + "000000")[:7] if fraction else "", 1)
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def same(sent, written, where):
    """Whether the model written back equals the JSON sent (date-times as instants)."""
    if isinstance(sent, dict) and isinstance(written, dict):
        if set(sent) != set(written):
            return f"{where}: members {sorted(set(sent) ^ set(written))} differ"
        for key in sent:
            problem = same(sent[key], written[key], f"{where}.{key}")
            if problem:
                return problem
        return None
    if isinstance(sent, list) and isinstance(written, list):
        if len(sent) != len(written):
            return f"{where}: {len(sent)} items sent, {len(written)} parsed"
        for i, (s, w) in enumerate(zip(sent, written)):
            problem = same(s, w, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(sent, str) and isinstance(written, str) and sent != written:
        a, b = as_instant(sent), as_instant(written)
        if a is not None and b is not None and a == b:
            return None
    if type(sent) is not type(written) or sent != written:
        return f"{where}: sent {sent!r}, parsed back as {written!r}"
    return None


def untyped(value, where):
    """Members left in `additional_properties` of a model that declares its members."""
    found = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            found += untyped(item, f"{where}[{i}]")
        return found
    if not hasattr(value, "to_dict") or not hasattr(value, "__attrs_attrs__"):
        return found
    declared = [a.name for a in value.__attrs_attrs__ if a.name != "additional_properties"]
    extra = getattr(value, "additional_properties", None) or {}
    if extra and declared:
        found.append(f"{where} ({type(value).__name__}): {sorted(extra)} untyped")
    for attribute in declared:
        found += untyped(getattr(value, attribute), f"{where}.{attribute}")
    return found


def check(label, op_id, view, response, expect_status):
    global CALLS, CHECKED_TYPED
    CALLS += 1
    _module, path, method, op = MODULES[op_id]
    status = int(response.status_code)
    expected = expect_status if isinstance(expect_status, tuple) else (expect_status,)
    if status not in expected:
        FAILURES.append(
            f"{label}: {method.upper()} {path} view={view}: status {status}, expected {expected}: "
            f"{response.content[:300]!r}"
        )
        return None
    kind, name = expected_shape(op, status, view)
    parsed = response.parsed
    if kind == "none":
        if parsed is not None:
            FAILURES.append(f"{label}: a bodiless {status} parsed as {parsed!r}")
        return parsed
    if kind == "text":
        if not isinstance(parsed, str):
            FAILURES.append(f"{label}: text parsed as {type(parsed).__name__}")
        return parsed
    sent = json.loads(response.content)
    if kind == "any":
        if parsed is not None and parsed != sent and not hasattr(parsed, "to_dict"):
            FAILURES.append(f"{label}: free-form answer parsed as {parsed!r}")
        return parsed
    if kind == "model":
        if type(parsed).__name__ != name:
            FAILURES.append(
                f"{label} (view={view}): parsed as {type(parsed).__name__}, the description "
                f"says {name}: {sent}"
            )
            return parsed
        written = parsed.to_dict()
    else:  # list
        if not isinstance(parsed, list):
            FAILURES.append(f"{label}: parsed as {type(parsed).__name__}, not a list of {name}")
            return parsed
        wrong = [type(p).__name__ for p in parsed if type(p).__name__ != name]
        if wrong:
            FAILURES.append(f"{label} (view={view}): items parsed as {wrong[:3]}, not {name}")
            return parsed
        written = [p.to_dict() for p in parsed]
    problems = untyped(parsed, label)
    difference = same(sent, written, label)
    if difference:
        problems.append(difference)
    FAILURES.extend(problems)
    if not problems:
        CHECKED_TYPED += 1
    return parsed


def call(op_id, view, expect=200, label=None, body=None, **params):
    module = MODULES[op_id][0]
    kwargs = kwargs_for(op_id, view, body=body, **params)
    response = module.sync_detailed(client=CLIENT, **kwargs)
    parsed = check(label or op_id, op_id, view, response, expect)
    return parsed, response


def both(op_id, make, expect=200):
    """Calls `op_id` in both views; `make(view)` gives the keyword arguments of each call."""
    out = {}
    for view in ("documented", "full"):
        out[view] = call(op_id, view, expect=expect, **make(view))
    return out


# --- the run --------------------------------------------------------------------------------

def unique(word):
    return f"{word} {uuid.uuid4().hex[:8]}"


def run():
    t0 = "1889-03-10T23:50:00Z"

    both("healthz", lambda v: {})
    both("readyz", lambda v: {})
    both("openapi", lambda v: {})
    both("problemType", lambda v: {"slug": "unknown-reference"})
    both("whoami", lambda v: {})
    for op in ("shardData", "entangleParticles"):
        both(op, lambda v: {"body": {"data": "anything"}}, expect=501)

    # Timelines: the documented, the guide's and the extensions.
    made = {}
    for view in ("documented", "full"):
        parsed, _ = call("createTimeline", view, expect=201,
                         body={"name": unique("Smoke"), "destination_time": t0})
        made[view] = parsed.id
    timeline = made["full"]
    guide = {}
    for view in ("documented", "full"):
        parsed, _ = call("guideCreateTimeline", view, expect=201,
                         body={"base_timeline_id": timeline, "description": unique("Branch")})
        guide[view] = parsed.timeline_id if view == "documented" else parsed.id
    parallel = {}
    for view in ("documented", "full"):
        parsed, _ = call("createParallelTimeline", view, expect=201,
                         body={"base_timeline_id": "primary", "description": unique("Parallel"),
                               "variation": "the lights stay on", "destination_time": t0})
        parallel[view] = parsed.timeline_id if view == "documented" else parsed.id
    both("listTimelines", lambda v: {})
    both("getTimeline", lambda v: {"timeline_id": timeline})
    both("guideListTimelines", lambda v: {})
    both("deleteTimeline", lambda v: {"timeline_id": made["documented"] if v == "documented"
                                      else parallel["full"]}, expect=204)

    # Events.
    def add(view, tl=timeline, description=None):
        parsed, _ = call("addEvent", view, expect=201, timeline_id=tl,
                         body={"description": description or unique("Event"),
                               "time": "1889-03-10T20:00:00Z", "location": "New York"})
        return parsed.event_id
    events = {v: add(v) for v in ("documented", "full")}
    both("listTimelineEvents", lambda v: {"timeline_id": timeline})
    both("searchEvents", lambda v: {"timeline_id": timeline, "location": "new york"})
    both("scanEvents", lambda v: {"body": {"timeline_id": timeline, "location": "New York"}})
    both("monitorEvents", lambda v: {"timeline_id": timeline})
    # Timelines as files: exported whole, and imported back (its id is taken here, so each
    # import creates a new timeline, the new id reported in `remapped`).
    exported = both("exportTimeline", lambda v: {"timeline_id": timeline})
    world = json.loads(exported["full"][1].content)
    both("importTimelines", lambda v: {"body": world}, expect=201)
    # Each view follows its own lineage: manipulated, manipulated again, reverted, and
    # manipulated the tutorial's way; each call names the lineage's current event.
    heads = dict(events)

    def follow(view, parsed, attribute):
        if parsed is not None:
            heads[view] = getattr(parsed, attribute)

    for view in ("documented", "full"):
        parsed, _ = call("manipulateEvent", view, body={
            "timeline_id": timeline, "event_id": heads[view],
            "new_outcome": {"description": unique("Manipulated")}})
        follow(view, parsed, "new_event_id")
        parsed, _ = call("guideManipulateEvent", view, body={
            "timeline_id": timeline, "event_id": heads[view],
            "new_outcome": {"description": unique("Again")}, "safety_check": True})
        follow(view, parsed, "new_event_id")
        parsed, _ = call("revertEvent", view, body={"timeline_id": timeline,
                                                    "event_id": heads[view]})
        follow(view, parsed, "original_event_id")
        call("tutorialManipulateEvent", view, body={
            "timeline_id": timeline, "event_id": heads[view], "action": unique("Tutorial"),
            "time": "1889-03-10T21:00:00Z"})
    both("checkParadox", lambda v: {"body": {
        "timeline_id": timeline,
        "proposed_changes": [{"event": "Retrieve the blueprint", "time": t0}]}})
    both("checkStability", lambda v: {"timeline_id": timeline})
    both("checkTimeline", lambda v: {"timeline_id": timeline, "significant_event": "Tutorial"})
    both("monitorTimeline", lambda v: {"timeline_id": timeline})
    both("monitorParadox", lambda v: {"timeline_id": timeline,
                                      "time_range": "1880-01-01T00:00:00Z/1900-01-01T00:00:00Z"})
    both("correctDissonance", lambda v: {"body": {"timeline_id": timeline,
                                                  "conflicting_events": [events[v]]}})
    isolated = {}
    for view in ("documented", "full"):
        target = add(view)
        parsed, _ = call("isolateEvent", view, body={"timeline_id": timeline, "event_id": target})
        isolated[view] = parsed.isolation_id
    both("liftIsolation", lambda v: {"isolation_id": isolated[v]}, expect=204)

    # Anchors, items and journeys.
    def anchor_at(minute):
        return f"2030-01-01T00:{minute:02d}:00Z"
    anchors = {}
    for i, view in enumerate(("documented", "full")):
        parsed, _ = call("setAnchor", view, expect=201,
                         body={"timestamp": anchor_at(i), "description": unique("Home")})
        anchors[view] = parsed.id
    both("listAnchors", lambda v: {})
    both("getAnchor", lambda v: {"anchor_id": anchors[v]})
    precise = {}
    for i, view in enumerate(("documented", "full")):
        parsed, _ = call("guideSetAnchor", view, expect=201,
                         body={"timestamp": f"2030-01-01T01:00:0{i}.123Z", "accuracy": "millisecond",
                               "description": unique("Precise"), "environment": {"pressure": 1}})
        precise[view] = parsed.anchor_id if view == "documented" else parsed.id
    # list-anchors with no body at all: the optional body left out.
    both("listGuideAnchors", lambda v: {})
    both("checkAnchorStability", lambda v: {"anchor_id": precise[v]})
    both("adjustAnchor", lambda v: {"body": {"anchor_id": precise[v],
                                             "new_environment": {"pressure": 2}}})
    both("deleteAnchor", lambda v: {"anchor_id": precise[v]})

    items = {}
    for view in ("documented", "full"):
        parsed, _ = call("registerItem", view, body={"description": unique("Blueprint")})
        items[view] = parsed.id
    both("listItems", lambda v: {})
    both("getItem", lambda v: {"item_id": items[v]})
    both("timeTravel", lambda v: {"body": {"destination": timeline,
                                           "items_transported": [items[v]]}})
    both("guideTravel", lambda v: {"body": {"destination_time": "1889-03-11T00:00:00Z",
                                            "location": "Colorado Springs"}})
    both("travelToTime", lambda v: {"body": {"destination_time": "1889-03-11T01:00:00Z",
                                             "location": "New York"}})
    both("fastForward", lambda v: {"body": {"duration": "10m"}})
    both("rewind", lambda v: {"body": {"duration": "5m"}})
    # pause-time and resume-time with no body at all: the optional body left out.
    both("pauseTime", lambda v: {})
    both("resumeTime", lambda v: {})
    both("retrieveItem", lambda v: {"item_description": unique("Notebook")})
    both("retrieveItemPost", lambda v: {"body": {"item_description": unique("Lamp")}})
    both("switchTimeline", lambda v: {"body": {"timeline_id": guide[v]}})
    both("guideReturn", lambda v: {"body": {"anchor_id": anchors[v]}})
    both("listJourneys", lambda v: {})
    both("simulateWormhole", lambda v: {"body": {"timeline_id": timeline,
                                                 "entry_point": "1889-03-10T22:00:00Z",
                                                 "exit_point": "1889-03-10T23:00:00Z"}})

    # Automation: scripts, jobs (named by Location) and the log.
    trigger = add("full")
    scripts = {}
    for view in ("documented", "full"):
        parsed, _ = call("createScript", view, expect=201, body={
            "script_name": unique("Follow"), "trigger_event_id": trigger, "timeline_id": timeline,
            "conditions": {"check_date": "2099-01-01T00:00:00Z", "status_check": "on_schedule"},
            "actions": [{"action_type": "manipulate", "event_id": trigger,
                         "new_details": "scrubbed"}]})
        scripts[view] = parsed.script_id
    both("listScripts", lambda v: {})
    both("deleteScript", lambda v: {"script_id": scripts[v]}, expect=204)
    jobs = {}
    for view in ("documented", "full"):
        _, response = call("scheduleManipulation", view, expect=201, body={
            "event_id": trigger, "timeline_id": timeline, "scheduled_time": "2099-01-01T00:00:00Z",
            "manipulation_details": {"new_details": "much later"}})
        jobs[view] = location_id(response, "/v1/schedules/")
    both("listSchedules", lambda v: {})
    both("deleteSchedule", lambda v: {"schedule_id": jobs[v]}, expect=204)
    for view in ("documented", "full"):
        _, response = call("triggerExternalManipulation", view, expect=202, body={
            "external_system": "ci", "timeline_id": timeline,
            "trigger_conditions": {"build_status": "success", "timestamp": "2099-01-01T00:00:00Z"},
            "actions": [{"action_type": "modify_event", "event_id": trigger,
                         "new_details": "rebuilt"}]})
        job = location_id(response, "/v1/schedules/")
        call("deleteSchedule", view, expect=204, label="deleteSchedule (trigger)", schedule_id=job)
    both("automationLog", lambda v: {"timeline_id": timeline})

    # Merges: pending ones named by Location, reviewed, resolved, aborted.
    def pending_merge(view):
        base_tl = call("createTimeline", view, expect=201, label="createTimeline (merge)",
                       body={"name": unique("Merge base")})[0].id
        event = add(view, base_tl)
        branch = call("guideCreateTimeline", "full", expect=201, label="guideCreateTimeline (merge)",
                      body={"base_timeline_id": base_tl, "description": unique("Merge branch")})[0].id
        for tl, what in ((branch, "in the branch"), (base_tl, "in the base")):
            call("guideManipulateEvent", view, label="guideManipulateEvent (merge)", body={
                "timeline_id": tl, "event_id": event, "new_outcome": {"description": what}})
        parsed, response = call("mergeTimelines", view, body={
            "source_timeline_id": branch, "destination_timeline_id": base_tl,
            "conflict_resolution": "manual_review"})
        if parsed is not None and parsed.status != "pending_review":
            FAILURES.append(f"mergeTimelines: {parsed.status}, expected pending_review")
        return base_tl, branch, event, location_id(response, "/v1/merges/")
    merges = {v: pending_merge(v) for v in ("documented", "full")}
    both("listMerges", lambda v: {})
    both("getMerge", lambda v: {"merge_id": merges[v][3]})
    both("reviewConflicts", lambda v: {"merged_timeline_id": merges[v][0]})
    both("diffTimelines", lambda v: {"source_timeline_id": merges[v][1],
                                     "destination_timeline_id": merges[v][0]})
    both("resolveConflict", lambda v: {"body": {"event_id": merges[v][2],
                                                "merged_timeline_id": merges[v][0],
                                                "resolution": "Keep Event A"}})
    aborted = {v: pending_merge(v) for v in ("documented", "full")}
    both("abortMerge", lambda v: {"merge_id": aborted[v][3]}, expect=204)

    # Temporal data.
    stored = {}
    for i, view in enumerate(("documented", "full")):
        stamp = f"1889-03-10T2{i}:30:00Z"
        call("storeData", view, expect=201, body={"timeline_id": timeline, "timestamp": stamp,
                                                   "data": {"note": unique("kept")}})
        stored[view] = stamp
    both("retrieveData", lambda v: {"timeline_id": timeline, "timestamp": stored[v]})
    secret = {}
    for view in ("documented", "full"):
        parsed, _ = call("encryptData", view, expect=201, body={
            "timeline_id": timeline, "data": {"code": unique("sealed")},
            "encryption_key": "correct horse battery staple", "timestamp": t0})
        secret[view] = parsed.data_id if view == "documented" else parsed.entry.data_id
    both("decryptData", lambda v: {"body": {"data_id": secret[v],
                                            "encryption_key": "correct horse battery staple"}})
    both("createIndex", lambda v: {"body": {"timeline_id": timeline, "index_type": "timestamp"}})
    for view in ("documented", "full"):
        # One setting per scope: each is turned off before the next is made.
        parsed, _ = call("enableCaching", view, body={"cache_duration": "10m",
                                                      "cache_scope": "timeline"})
        call("disableCaching", view, expect=204, cache_id=parsed.cache_id)

    # Integrity and security.
    both("detectTampering", lambda v: {"body": {"timeline_id": timeline}})
    both("validateIntegrity", lambda v: {"body": {"timeline_id": timeline}})
    both("setAccessControl", lambda v: {"body": {"timeline_id": guide[v], "permissions": {
        "admin": [ARGS.subject], "read": ["everyone-else"]}}})
    both("getAccessControl", lambda v: {"timeline_id": guide[v]})
    both("listAccessControls", lambda v: {})
    both("accessLogs", lambda v: {"timeline_id": timeline})
    both("restrictTimeTravel", lambda v: {"body": {"user_id": f"restricted-{v}",
                                                   "restriction_level": "read_only"}})
    both("listRestrictions", lambda v: {})

    streams()


def location_id(response, prefix):
    location = response.headers.get("location", "")
    if not location.startswith(prefix):
        FAILURES.append(f"Location {location!r} does not name {prefix}{{id}}")
        return "missing"
    return location[len(prefix):]


def streams():
    """The two streams, read as streams: the first event, parsed into the generated models."""
    global CALLS, CHECKED_TYPED
    for op_id, event_model, params in (
        ("streamMonitorTimeline", "MonitorTimelineStreamEvent", {"timeline_id": "primary"}),
        ("streamMonitorEvents", "MonitorEventsStreamEvent", {"timeline_id": "primary"}),
    ):
        module, path, _method, op = MODULES[op_id]
        media = op["responses"]["200"]["content"]["text/event-stream"]
        if media.get("x-itemSchema", {}).get("$ref", "").rsplit("/", 1)[-1] != event_model:
            FAILURES.append(f"{op_id}: x-itemSchema names no {event_model}")
            continue
        for view in ("documented", "full"):
            CALLS += 1
            kwargs = module._get_kwargs(**kwargs_for(op_id, view, **params))
            fields = {}
            with CLIENT.get_httpx_client().stream(**kwargs) as response:
                if response.status_code != 200:
                    FAILURES.append(f"{op_id}: status {response.status_code}")
                    continue
                for line in response.iter_lines():
                    if line == "" and "data" in fields:
                        break
                    if line.startswith(":"):
                        continue
                    name, _, value = line.partition(":")
                    fields[name] = value[1:] if value.startswith(" ") else value
            problem = check_event(op_id, event_model, fields)
            if problem:
                FAILURES.append(f"{op_id} (view={view}): {problem}")
            else:
                CHECKED_TYPED += 1


def check_event(op_id, event_model, fields):
    """The event as the description names it: one of the event schemas, by its name, and its
    data as the component that schema names, parsed into the generated model."""
    schema = SPEC["components"]["schemas"][event_model]
    named = [s for s in schema["oneOf"] if s["properties"]["event"]["const"] == fields.get("event")]
    if len(named) != 1:
        return f"event {fields.get('event')!r} is not one the description names"
    for required in named[0]["required"]:
        if required not in fields:
            return f"event {fields['event']!r} lacks {required}"
    data_model = component(named[0]["properties"]["data"]["contentSchema"]["$ref"])
    models = importlib.import_module(f"{PKG.__name__}.models")
    data = json.loads(fields["data"])
    # A union component (EventsChange, tagged by `kind`) is generated as one model per
    # alternative: the one its `kind` fits parses it.
    candidates = [getattr(models, data_model, None)] + [
        getattr(models, f"{data_model}Type{i}", None) for i in range(8)
    ]
    parsed = None
    for candidate in filter(None, candidates):
        try:
            parsed = candidate.from_dict(data)
            break
        except (KeyError, TypeError, ValueError):
            continue
    if parsed is None:
        return f"data is no {data_model}: {data}"
    problems = untyped(parsed, f"{op_id} data")
    difference = same(data, parsed.to_dict(), f"{op_id} data")
    if difference:
        problems.append(difference)
    return "; ".join(problems) or None


def main():
    global ARGS, SPEC, PKG, CLIENT
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--subject", required=True, help="the token's traveller")
    parser.add_argument("--spec", required=True)
    parser.add_argument("--package", required=True)
    ARGS = parser.parse_args()
    with open(ARGS.spec, encoding="utf-8") as f:
        SPEC = json.load(f)
    PKG = importlib.import_module(ARGS.package)
    CLIENT = PKG.AuthenticatedClient(
        base_url=ARGS.base, token=ARGS.token, raise_on_unexpected_status=True,
        timeout=httpx.Timeout(30.0),
    )
    load_modules()
    called = set()
    original = check

    def counting(label, op_id, view, response, expect_status):
        called.add((op_id, view))
        return original(label, op_id, view, response, expect_status)

    globals()["check"] = counting
    try:
        run()
    except Exception:  # noqa: BLE001 - reported with what failed before it
        import traceback

        FAILURES.append("the run stopped: " + traceback.format_exc().strip().splitlines()[-1])
        traceback.print_exc()
    called.update((op, view) for op in ("streamMonitorTimeline", "streamMonitorEvents")
                  for view in ("documented", "full"))
    for op_id in sorted(MODULES):
        for view in ("documented", "full"):
            if (op_id, view) not in called:
                FAILURES.append(f"{op_id}: never called in the {view} view")
    for failure in FAILURES:
        print(f"FAIL {failure}")
    print(
        f"client-gen smoke: {CALLS} calls of {len(MODULES)} operations, {CHECKED_TYPED} answers "
        f"parsed whole into their typed models, {len(FAILURES)} failures"
    )
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
