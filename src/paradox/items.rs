//! Item paradoxes: an item present twice in one timeline, or left in its own origin
//! timeline before it was found there.
//!
//! An item's presences in timeline X: from its origin time until it was first taken away
//! (when X is its origin), from the time it was left in X, and with its traveller while they
//! are in X. A presence that continues the native one is not counted twice.

use std::collections::HashMap as StdHashMap;

use super::{Change, Paradox, ParadoxKind, Subject};
use crate::model::{Instant, Item, ItemId, Whereabouts, format_instant};

/// One stretch of time an item is in the checked timeline.
#[derive(Clone, Debug)]
struct Presence {
    from: Instant,
    until: Option<Instant>,
    how: String,
}

impl Presence {
    /// Whether this presence and one from `t` onwards share an instant.
    fn overlaps_from(&self, t: Instant) -> bool {
        let start = self.from.max(t);
        self.until.is_none_or(|u| start < u)
    }
}

/// The item's presences in the checked timeline as it stands: the native one first.
fn presences(subject: &Subject<'_>, item: &Item) -> (Option<Presence>, Option<Presence>) {
    let x = subject.timeline;
    let native = (&item.origin_timeline == x).then(|| Presence {
        from: item.origin_time,
        until: item.taken_at,
        how: "where it was found".into(),
    });
    // Never taken from its origin: being left or carried there is the native presence.
    let continues_native = native.is_some() && item.taken_at.is_none();
    let other = match &item.whereabouts {
        Whereabouts::Left { timeline, time } if timeline == x && !continues_native => {
            Some(Presence {
                from: *time,
                until: None,
                how: "left there".into(),
            })
        }
        Whereabouts::Carried if &subject.position.timeline == x && !continues_native => {
            Some(Presence {
                from: subject.position.arrival_time,
                until: None,
                how: format!("carried there by {}", subject.traveller),
            })
        }
        _ => None,
    };
    (native, other)
}

fn name(item: &Item) -> String {
    format!("Item '{}' ({})", item.description, item.id)
}

fn paradox(kind: ParadoxKind, item: &Item, description: String) -> Paradox {
    Paradox {
        kind,
        description,
        events: Vec::new(),
        items: vec![item.id.clone()],
    }
}

fn bootstrap(subject: &Subject<'_>, item: &Item, at: Instant, verb: &str) -> Paradox {
    paradox(
        ParadoxKind::ItemWithoutOrigin,
        item,
        format!(
            "{} {verb} its origin timeline {} at {}, before it was found there at {}: \
             a bootstrap loop.",
            name(item),
            subject.timeline,
            format_instant(&at),
            format_instant(&item.origin_time),
        ),
    )
}

/// Standing item paradoxes of the traveller's items in the checked timeline, then those the
/// proposed [`Change::BringItem`]s would add. The same for the incremental and the full check.
pub(super) fn item_paradoxes(subject: &Subject<'_>, changes: &[Change]) -> Vec<Paradox> {
    let x = subject.timeline;
    let mut out = Vec::new();
    let mut present: StdHashMap<&ItemId, Vec<Presence>> = StdHashMap::new();
    for item in subject.items {
        let (native, other) = presences(subject, item);
        if let (Some(n), Some(o)) = (&native, &other) {
            if o.from < item.origin_time {
                out.push(bootstrap(subject, item, o.from, "is in"));
            } else if n.overlaps_from(o.from) {
                out.push(paradox(
                    ParadoxKind::DuplicateItem,
                    item,
                    format!(
                        "{} is in timeline {x} twice: from {} ({}) and from {} ({}).",
                        name(item),
                        format_instant(&n.from),
                        n.how,
                        format_instant(&o.from),
                        o.how,
                    ),
                ));
            }
        }
        present.insert(&item.id, native.into_iter().chain(other).collect());
    }
    for change in changes {
        let Change::BringItem { item: id, time } = change else {
            continue;
        };
        let Some(item) = subject.items.iter().find(|i| &i.id == id) else {
            continue;
        };
        // Already with the traveller in this timeline: the same presence, nothing new.
        if item.whereabouts == Whereabouts::Carried && &subject.position.timeline == x {
            continue;
        }
        let list = present.entry(&item.id).or_default();
        if &item.origin_timeline == x && *time < item.origin_time {
            out.push(bootstrap(subject, item, *time, "would be left in"));
        } else if let Some(p) = list.iter().find(|p| p.overlaps_from(*time)) {
            out.push(paradox(
                ParadoxKind::DuplicateItem,
                item,
                format!(
                    "{} would be in timeline {x} twice: brought at {} while it is there \
                     from {} ({}).",
                    name(item),
                    format_instant(time),
                    format_instant(&p.from),
                    p.how,
                ),
            ));
        }
        list.push(Presence {
            from: *time,
            until: None,
            how: "brought by this check".into(),
        });
    }
    out
}
