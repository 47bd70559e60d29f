//! Identifiers: prefixed, sortable, opaque (`tml_` + lowercase ULID and friends).
//!
//! Each id type is parsed once at the edge (`FromStr`) and trusted inside. New ids are
//! minted by the engine from a ULID so they sort by creation time.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::InvalidValue;

/// Longest identifier we accept; anything longer is a typo or an attack.
const MAX_ID_LEN: usize = 128;

fn valid_id_chars(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ID_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $what:literal) => {
        $(#[$doc])*
        ///
        /// Shared text: a clone is a reference count, not a copy (a history names each event
        /// id in several places, and a big one holds a million of them).
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            /// The prefix every minted id of this kind carries.
            pub const PREFIX: &'static str = $prefix;

            /// Mints a new id from a ULID (the engine supplies it, so tests can be deterministic).
            pub fn from_ulid(ulid: ulid::Ulid) -> Self {
                Self(format!("{}{}", $prefix, ulid.to_string().to_lowercase()).into())
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            fn invalid(s: &str) -> InvalidValue {
                InvalidValue::new(
                    $what,
                    format!(
                        "'{}' is not a valid {} id (1 to {} letters, digits, '_', '-' or '.')",
                        s.chars().take(40).collect::<String>(),
                        $what,
                        MAX_ID_LEN
                    ),
                )
            }
        }

        impl FromStr for $name {
            type Err = InvalidValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                if valid_id_chars(s) {
                    Ok(Self(s.into()))
                } else {
                    Err(Self::invalid(s))
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidValue;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                s.parse()
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0.to_string()
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        // By hand: read from the borrowed text straight into the shared string, one allocation
        // (reading a big log or snapshot makes millions of these).
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} id", $what)
                    }
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<$name, E> {
                        s.parse().map_err(|e: InvalidValue| E::custom(e))
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                string_schema(concat!("A ", $what, " id"))
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

/// The OpenAPI schema of an id: a string of the accepted characters.
fn string_schema(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .description(Some(description))
        .pattern(Some("^[A-Za-z0-9_.-]{1,128}$"))
        .into()
}

id_type!(
    /// A timeline; the literal `primary` is the main timeline.
    TimelineId, "tml_", "timeline"
);
id_type!(
    /// An event. Demo and imported events keep their own ids (`ai-malfunction-trigger`).
    EventId, "evt_", "event"
);
id_type!(
    /// An item registered by a traveller.
    ItemId, "itm_", "item"
);
id_type!(
    /// A temporal anchor (a return ticket).
    AnchorId, "anc_", "anchor"
);
id_type!(
    /// A recorded journey.
    JourneyId, "jrn_", "journey"
);
id_type!(
    /// An automation script.
    ScriptId, "scr_", "script"
);
id_type!(
    /// A scheduled or externally triggered manipulation.
    ScheduleId, "sch_", "schedule"
);
id_type!(
    /// A merge of one timeline into another.
    MergeId, "mrg_", "merge"
);
id_type!(
    /// An isolation of events on a timeline (an overlay; guide §4).
    IsolationId, "iso_", "isolation"
);
id_type!(
    /// An anomaly found by the monitor; derived from its cause, so stable across calls.
    AnomalyId, "anm_", "anomaly"
);

id_type!(
    /// A data entry stored in a timeline (`store-data`, `encrypt-data`).
    DataId, "dat_", "data entry"
);
id_type!(
    /// A traveller's read-staleness setting (`enable-caching`).
    CacheId, "cch_", "cache setting"
);

impl TimelineId {
    /// The id of the main timeline, which always exists.
    pub fn primary() -> Self {
        Self("primary".into())
    }

    /// Whether this is the main timeline.
    pub fn is_primary(&self) -> bool {
        &*self.0 == "primary"
    }
}

impl AnomalyId {
    /// A stable id derived from the anomaly's cause: the same cause gives the same id.
    pub fn derived(cause: &str) -> Self {
        Self::from_ulid(ulid::Ulid::from(stable_hash128(cause.as_bytes())))
    }
}

/// FNV-1a over 128 bits: stable across builds and platforms, unlike `std`'s hasher.
fn stable_hash128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u128::from(*b)).wrapping_mul(PRIME))
}

/// Who is acting: the `sub` claim of a token, or the OS user in embedded mode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Traveller(String);

impl Traveller {
    /// The traveller's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The most characters (not bytes) a name holds.
    pub const MAX_CHARS: usize = MAX_ID_LEN;

    /// Whether `c` may stand anywhere in a name: neither a control character nor an invisible
    /// format character (a zero-width space, a direction override) that would show as another
    /// traveller's name in access lists and logs.
    pub fn may_hold(c: char) -> bool {
        use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
        // ASCII holds no format character: most names (and every record replayed at start)
        // skip the table lookup.
        !c.is_control() && (c.is_ascii() || c.general_category() != GeneralCategory::Format)
    }

    /// Whether `c` may begin or end a name: what [`Traveller::may_hold`] allows, less white space.
    pub fn may_end(c: char) -> bool {
        !c.is_whitespace() && Self::may_hold(c)
    }
}

impl FromStr for Traveller {
    type Err = InvalidValue;
    /// A name is taken exactly as given: `" root"` is refused, never read as `root`, and so
    /// is a name with a character [`Traveller::may_hold`] refuses. The served description's
    /// `user_id` pattern is built from the same two tests (`server::openapi`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let refuse = |why: &str| Err(InvalidValue::new("traveller", why));
        if s.is_empty()
            || s.chars().nth(Self::MAX_CHARS).is_some()
            || s.chars().any(char::is_control)
        {
            return refuse("a traveller name is 1 to 128 printable characters");
        }
        if s.trim() != s {
            return refuse("a traveller name may not begin or end with a space");
        }
        if let Some(c) = s.chars().find(|&c| !Self::may_hold(c)) {
            return refuse(&format!(
                "a traveller name may not hold invisible format characters (U+{:04X})",
                u32::from(c)
            ));
        }
        Ok(Self(s.to_owned()))
    }
}

impl TryFrom<String> for Traveller {
    type Error = InvalidValue;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Traveller> for String {
    fn from(t: Traveller) -> String {
        t.0
    }
}

impl utoipa::PartialSchema for Traveller {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some("A traveller: the sub claim of their token"))
            .into()
    }
}

impl utoipa::ToSchema for Traveller {}

impl fmt::Display for Traveller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_carry_prefix_and_lowercase_ulid() {
        let id = TimelineId::from_ulid(ulid::Ulid::from(42u128));
        assert!(id.as_str().starts_with("tml_"));
        assert_eq!(id.as_str().len(), 4 + 26);
        assert_eq!(id.as_str(), id.as_str().to_lowercase());
    }

    #[test]
    fn ids_reject_empty_and_odd_characters() {
        assert!("".parse::<EventId>().is_err());
        assert!("a b".parse::<EventId>().is_err());
        assert!("x".repeat(129).parse::<ItemId>().is_err());
        assert!("event-5678abcd".parse::<EventId>().is_ok());
    }

    #[test]
    fn derived_anomaly_ids_are_stable_and_distinct() {
        assert_eq!(AnomalyId::derived("a"), AnomalyId::derived("a"));
        assert_ne!(AnomalyId::derived("a"), AnomalyId::derived("b"));
        assert!(AnomalyId::derived("a").as_str().starts_with("anm_"));
    }
}
