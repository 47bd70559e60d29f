// Type-checked by run.sh against the types openapi-typescript generates from the served
// description (chronoscope.d.ts beside this file): what issue 42 found untyped is typed.
import type { components, paths } from "./chronoscope";

type Schemas = components["schemas"];

// A new timeline's fields are typed beside its rule (a name or a description).
const branch: Schemas["NewTimeline"] = {
  description: "Branch",
  base_timeline_id: "primary",
  variation: "the lights stay on",
  destination_time: "1889-03-10T23:50:00Z",
};
// @ts-expect-error neither a name nor a description
const nameless: Schemas["NewTimeline"] = { variation: "the lights stay on" };

// The documented manipulation names its timeline; the guide's may leave it out.
const manipulation: Schemas["ManipulateEventRequest"] = {
  timeline_id: "primary",
  event_id: "evt_1",
  new_outcome: {},
};
// @ts-expect-error timeline_id is required by POST /v1/events
const untargeted: Schemas["ManipulateEventRequest"] = { event_id: "evt_1", new_outcome: {} };
const guided: Schemas["ManipulateRequest"] = { event_id: "evt_1", new_outcome: {} };

// Bodies that may be left out are optional.
const noBody: paths["/v1/pause-time"]["post"]["requestBody"] = undefined;

// Each answer is its full type or its documented projection; the full members are typed.
function eventCount(t: Schemas["TimelineView"]): number | undefined {
  return "event_count" in t ? t.event_count : undefined;
}

// Jobs and merges name what they made in Location.
const job: paths["/v1/schedule-manipulation"]["post"]["responses"][201]["headers"]["Location"] =
  "/v1/schedules/sch_1";

// The streams are text; one event's shape is a component.
const text: paths["/v1/monitor-timeline/stream"]["get"]["responses"][200]["content"]["text/event-stream"] =
  "event: snapshot";
const event: Schemas["MonitorTimelineStreamEvent"] = { event: "snapshot", id: "1", data: "{}" };

export { branch, nameless, manipulation, untargeted, guided, noBody, eventCount, job, text, event };
