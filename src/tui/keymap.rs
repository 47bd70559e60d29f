//! The key map as data: one table of (key, action, description, context).
//!
//! The help screen, the footer hints and the `:` command line are all generated from this
//! table, and a JSON file can rebind any action. A key bound to two actions that can be live at
//! the same time is refused before the terminal is touched, naming both actions.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::intent::Action;
use super::panes::PaneId;

/// Where a binding applies: everywhere, or only while a pane has the focus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Context {
    /// Any pane.
    Global,
    /// The timelines pane.
    Timelines,
    /// The event search pane.
    Search,
    /// The anomaly monitor pane.
    Monitor,
    /// The automation log pane.
    Log,
}

impl Context {
    /// Where a key of this context works, for one pressed elsewhere.
    pub fn where_it_works(self) -> &'static str {
        match self {
            Context::Search => "select an event in the search first (tab)",
            Context::Timelines => "in the timelines pane (esc goes there)",
            Context::Monitor => "in the monitor (tab)",
            Context::Log => "in the automation log (L shows it)",
            Context::Global => "anywhere",
        }
    }

    /// The keys of the focused pane.
    pub fn of(pane: PaneId) -> Self {
        match pane {
            PaneId::Timelines => Context::Timelines,
            PaneId::Search => Context::Search,
            PaneId::Monitor => Context::Monitor,
            PaneId::Log => Context::Log,
        }
    }

    /// Name shown in the help screen.
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Timelines => "Timelines",
            Context::Search => "Event search",
            Context::Monitor => "Anomaly monitor",
            Context::Log => "Automation log",
        }
    }

    /// Whether bindings of `self` and `other` can both be live at once.
    fn overlaps(self, other: Context) -> bool {
        self == other || self == Context::Global || other == Context::Global
    }
}

/// A key with its modifiers, as written in the key map (`q`, `ctrl-c`, `shift-tab`, `f5`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// The key.
    pub code: KeyCode,
    /// Only CONTROL and ALT are kept: SHIFT is already in the character (`L`, `?`).
    pub modifiers: KeyModifiers,
}

impl Key {
    /// A plain character key.
    pub const fn char(c: char) -> Self {
        Self {
            code: KeyCode::Char(c),
            modifiers: KeyModifiers::NONE,
        }
    }

    /// A key without modifiers.
    pub const fn code(code: KeyCode) -> Self {
        Self {
            code,
            modifiers: KeyModifiers::NONE,
        }
    }

    /// A character with CONTROL held.
    pub const fn ctrl(c: char) -> Self {
        Self {
            code: KeyCode::Char(c),
            modifiers: KeyModifiers::CONTROL,
        }
    }

    /// Normalizes a terminal key event so it compares equal to the table's keys.
    pub fn from_event(ev: &KeyEvent) -> Self {
        let mut modifiers = ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
        let code = match ev.code {
            // Terminals differ on whether Shift-Tab carries SHIFT; BackTab says it all.
            KeyCode::BackTab => KeyCode::BackTab,
            KeyCode::Char(c) if modifiers.contains(KeyModifiers::CONTROL) => {
                KeyCode::Char(c.to_ascii_lowercase())
            }
            other => other,
        };
        if matches!(code, KeyCode::BackTab) {
            modifiers = KeyModifiers::NONE;
        }
        Self { code, modifiers }
    }
}

impl std::str::FromStr for Key {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut modifiers = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if rest.chars().count() > 1 && lower.starts_with("ctrl-") {
                modifiers |= KeyModifiers::CONTROL;
                rest = &rest[5..];
            } else if rest.chars().count() > 1 && lower.starts_with("alt-") {
                modifiers |= KeyModifiers::ALT;
                rest = &rest[4..];
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(if modifiers.contains(KeyModifiers::CONTROL) {
                c.to_ascii_lowercase()
            } else {
                c
            }),
            _ => match rest.to_ascii_lowercase().as_str() {
                "tab" => KeyCode::Tab,
                "shift-tab" | "backtab" => KeyCode::BackTab,
                "enter" | "return" => KeyCode::Enter,
                "esc" | "escape" => KeyCode::Esc,
                "space" => KeyCode::Char(' '),
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pageup" => KeyCode::PageUp,
                "pagedown" => KeyCode::PageDown,
                "backspace" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                other => match other.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
                    Some(n) if (1..=12).contains(&n) => KeyCode::F(n),
                    _ => {
                        return Err(format!(
                            "'{s}' is not a key (try q, ctrl-r, tab, f5, space)"
                        ));
                    }
                },
            },
        };
        Ok(Self { code, modifiers })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("del"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// One row of the key map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The keys that trigger it.
    pub keys: Vec<Key>,
    /// What it does.
    pub action: Action,
    /// A few words for the help screen and the footer.
    pub description: &'static str,
    /// Where it applies.
    pub context: Context,
    /// The footer's short label; `None` keeps it out of the footer (it is still in help).
    pub hint: Option<&'static str>,
}

/// The default bindings: the one place keys are written.
/// Columns: keys (space-separated), action, description, context, footer label ("" = none).
#[rustfmt::skip]
const DEFAULTS: &[(&str, Action, &str, Context, &str)] = {
    use Action as A;
    use Context as C;
    &[
        ("q",             A::Quit,             "quit",                                          C::Global,    "quit"),
        ("?",             A::Help,             "help: every binding",                           C::Global,    "help"),
        ("tab",           A::NextPane,         "next pane",                                     C::Global,    "pane"),
        ("shift-tab",     A::PrevPane,         "previous pane",                                 C::Global,    ""),
        ("up k",          A::Up,               "move up",                                       C::Global,    ""),
        ("down j",        A::Down,             "move down",                                     C::Global,    ""),
        ("left h",        A::Left,             "pane to the left",                              C::Global,    ""),
        ("right l",       A::Right,            "pane to the right",                             C::Global,    ""),
        ("pageup",        A::PageUp,           "page up",                                       C::Global,    ""),
        ("pagedown",      A::PageDown,         "page down",                                     C::Global,    ""),
        ("home g",        A::Top,              "first row",                                     C::Global,    ""),
        ("end G",         A::Bottom,           "last row",                                      C::Global,    ""),
        ("enter",         A::Open,             "open: a timeline's events, an event's detail",  C::Global,    ""),
        ("esc",           A::Back,             "back",                                          C::Global,    ""),
        ("/",             A::Filter,           "filter timelines / edit the event search",      C::Global,    "filter"),
        (":",             A::Command,          "command line (tab completes; :search PLACE)",  C::Global,    "cmd"),
        ("ctrl-r",        A::Refresh,          "refresh now",                                   C::Global,    ""),
        ("n",             A::NewTimeline,      "new timeline",                                  C::Global,    "new"),
        ("p",             A::ParallelTimeline, "parallel timeline of the selected one",         C::Global,    "parallel"),
        ("d",             A::DeleteTimeline,   "delete the selected timeline (asks first)",     C::Timelines, "delete"),
        ("e",             A::AddEvent,         "add an event to the selected timeline",         C::Global,    ""),
        ("m",             A::Manipulate,       "manipulate the selected event (safety checked)", C::Search,   "manipulate"),
        ("r",             A::Revert,           "revert the selected event's latest change",     C::Search,    "revert"),
        ("I",             A::Isolate,          "isolate the selected event and its causal loop", C::Search,   "isolate"),
        ("C",             A::CorrectDissonance, "move the selected event after its causes",     C::Search,    "align"),
        ("a",             A::SetAnchor,        "set an anchor where you are",                   C::Global,    "anchor"),
        ("t",             A::Travel,           "travel (wizard)",                               C::Global,    "travel"),
        ("b",             A::ReturnToAnchor,   "return to an anchor",                           C::Global,    "return"),
        ("i",             A::RegisterItem,     "register an item where you are",                C::Global,    ""),
        ("c",             A::CheckParadox,     "check a draft change for paradoxes",            C::Global,    "check"),
        ("f",             A::Freeze,           "freeze / unfreeze the monitor",                 C::Monitor,   "freeze"),
        ("L",             A::ShowLog,          "automation log / back to the monitor",          C::Global,    ""),
        ("J",             A::Journeys,         "your journeys, newest first",                   C::Global,    ""),
        ("v",             A::TimelineView,     "picture of the selected timeline along time",   C::Global,    "picture"),
        ("space",         A::PauseResume,      "pause / resume your clock (the world goes on)", C::Global,  "pause"),
        (">",             A::FastForward,      "fast-forward you by a preset or typed duration", C::Global,   "ffwd"),
        ("<",             A::Rewind,           "rewind you by a preset or typed duration",      C::Global,    "rewind"),
        ("A",             A::Anchors,          "your anchors: stability, adjust, delete",       C::Global,    "anchors"),
        ("D",             A::Diff,             "diff the selected timeline with a relative",   C::Timelines, "diff"),
        ("M",             A::Merge,            "merge the selected timeline (wizard, checked)", C::Timelines, "merge"),
        ("U",             A::Isolations,       "isolations of the selected timeline: list, lift", C::Timelines, ""),
        ("r",             A::Review,           "review the merges waiting into it (marked ⇄)",  C::Timelines, ""),
        ("S",             A::AccessControl,    "access lists and log of the selected timeline",  C::Global,    ""),
        ("R",             A::Restrictions,     "restrictions on travellers (operators)",        C::Global,    ""),
        ("T",             A::Integrity,        "integrity check of the selected timeline",      C::Global,    ""),
        ("w",             A::LastMessage,      "the last footer message, whole",                C::Global,    ""),
    ]
};

fn defaults() -> Vec<Binding> {
    DEFAULTS
        .iter()
        .map(|(keys, action, description, context, hint)| Binding {
            keys: keys
                .split_whitespace()
                .filter_map(|k| k.parse().ok()) // every default parses: tested below
                .collect(),
            action: *action,
            description,
            context: *context,
            hint: (!hint.is_empty()).then_some(*hint),
        })
        .collect()
}

/// The live key map.
#[derive(Clone, Debug)]
pub struct KeyMap {
    bindings: Vec<Binding>,
}

impl Default for KeyMap {
    fn default() -> Self {
        Self {
            bindings: defaults(),
        }
    }
}

/// Why a key map could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyMapError {
    /// The file could not be read or parsed.
    #[error("key map {path}: {message}")]
    Unreadable {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The file names an action that does not exist.
    #[error("key map: '{0}' is not an action; known actions: {1}")]
    UnknownAction(String, String),
    /// A key is written wrongly.
    #[error("key map: {0}")]
    BadKey(String),
    /// One key, two actions live at the same time.
    #[error("key map: '{key}' is bound to both '{first}' and '{second}'; rebind one of them")]
    Conflict {
        /// The key.
        key: String,
        /// One action.
        first: &'static str,
        /// The other.
        second: &'static str,
    },
}

impl KeyMap {
    /// Every binding, in table order.
    pub fn bindings(&self) -> &[Binding] {
        &self.bindings
    }

    /// The default map with overrides from a JSON file: `{"action_name": "key" | ["key", ...]}`.
    pub fn load(path: &Path) -> Result<Self, KeyMapError> {
        let text = std::fs::read_to_string(path).map_err(|e| KeyMapError::Unreadable {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_json(&text).map_err(|e| match e {
            KeyMapError::Unreadable { message, .. } => KeyMapError::Unreadable {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    /// The default map with overrides written as JSON (see [`KeyMap::load`]).
    pub fn from_json(text: &str) -> Result<Self, KeyMapError> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Keys {
            One(String),
            Many(Vec<String>),
        }
        let overrides: BTreeMap<String, Keys> =
            serde_json::from_str(text).map_err(|e| KeyMapError::Unreadable {
                path: "(inline)".into(),
                message: e.to_string(),
            })?;
        let mut map = Self::default();
        for (name, keys) in overrides {
            let action = Action::from_name(&name).ok_or_else(|| {
                KeyMapError::UnknownAction(
                    name.clone(),
                    Action::ALL
                        .iter()
                        .map(|a| a.name())
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            })?;
            let keys = match keys {
                Keys::One(k) => vec![k],
                Keys::Many(ks) => ks,
            };
            let keys = keys
                .iter()
                .map(|k| k.parse::<Key>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(KeyMapError::BadKey)?;
            for b in map.bindings.iter_mut().filter(|b| b.action == action) {
                b.keys = keys.clone();
            }
        }
        map.validate()?;
        Ok(map)
    }

    /// Refuses a key bound to two actions that can be live at once.
    pub fn validate(&self) -> Result<(), KeyMapError> {
        for (i, a) in self.bindings.iter().enumerate() {
            for b in &self.bindings[i + 1..] {
                if a.action == b.action || !a.context.overlaps(b.context) {
                    continue;
                }
                if let Some(key) = a.keys.iter().find(|k| b.keys.contains(k)) {
                    return Err(KeyMapError::Conflict {
                        key: key.to_string(),
                        first: a.action.name(),
                        second: b.action.name(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The action a key triggers with `context` focused: the pane's own bindings first.
    pub fn resolve(&self, key: Key, context: Context) -> Option<Action> {
        let find = |ctx: Context| {
            self.bindings
                .iter()
                .find(|b| b.context == ctx && b.keys.contains(&key))
                .map(|b| b.action)
        };
        find(context).or_else(|| find(Context::Global))
    }

    /// A key bound only in another pane than `context`: that binding's context and what it
    /// does, so a key that does nothing here can say where it works.
    pub fn elsewhere(&self, key: Key, context: Context) -> Option<(Context, &'static str)> {
        self.bindings
            .iter()
            .find(|b| b.context != context && b.context != Context::Global && b.keys.contains(&key))
            .map(|b| (b.context, b.description))
    }

    /// The first key of an action, for hints written in prose ("press t to travel").
    pub fn key_for(&self, action: Action) -> String {
        self.bindings
            .iter()
            .find(|b| b.action == action)
            .and_then(|b| b.keys.first())
            .map(|k| k.to_string())
            .unwrap_or_else(|| format!(":{}", action.name()))
    }

    /// Footer hints for a focused pane: its own bindings, then the global ones.
    pub fn hints(&self, context: Context) -> Vec<(String, &'static str)> {
        self.hints_where(context, |_| true)
    }

    /// [`KeyMap::hints`] of the actions `offered` keeps (a key that would only be refused, as a
    /// change is for a read-only token, is not offered).
    pub fn hints_where(
        &self,
        context: Context,
        offered: impl Fn(Action) -> bool,
    ) -> Vec<(String, &'static str)> {
        let mut own: Vec<_> = self
            .bindings
            .iter()
            .filter(|b| offered(b.action))
            .filter(|b| b.hint.is_some() && b.context == context && context != Context::Global)
            .collect();
        own.extend(
            self.bindings
                .iter()
                .filter(|b| offered(b.action))
                .filter(|b| b.hint.is_some() && b.context == Context::Global),
        );
        own.into_iter()
            .filter_map(|b| Some((b.keys.first()?.to_string(), b.hint?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_key_parses() {
        for (keys, action, ..) in DEFAULTS {
            for k in keys.split_whitespace() {
                assert!(k.parse::<Key>().is_ok(), "{k} of {}", action.name());
            }
        }
    }

    #[test]
    fn the_default_map_has_no_conflicts() {
        assert_eq!(KeyMap::default().validate(), Ok(()));
    }

    #[test]
    fn keys_parse_and_print_back() {
        for s in ["q", "ctrl-r", "tab", "shift-tab", "f5", "space", "L", "?"] {
            let k: Key = s.parse().unwrap();
            assert_eq!(k.to_string(), s);
        }
        assert!("nonsense".parse::<Key>().is_err());
    }

    #[test]
    fn a_pane_binding_wins_over_a_global_one() {
        let map = KeyMap::default();
        assert_eq!(
            map.resolve(Key::char('d'), Context::Timelines),
            Some(Action::DeleteTimeline)
        );
        assert_eq!(map.resolve(Key::char('d'), Context::Search), None);
        assert_eq!(
            map.resolve(Key::char('q'), Context::Search),
            Some(Action::Quit)
        );
    }
}
