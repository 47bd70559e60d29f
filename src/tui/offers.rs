//! What a screen offers (after gitui's `CommandInfo`): each of its commands with the keys that
//! give it and the words that say it. A screen finds the command of a key through its list
//! ([`find`]), and its hint line ([`hint`]) and the help's note on it are written from the same
//! list: a key that does nothing cannot be listed, and a listed key always reaches its command.

use crossterm::event::{KeyCode, KeyEvent};

use super::keymap::Key;
use super::widgets::Cursor;

/// One command a screen offers.
#[derive(Clone, Copy, Debug)]
pub struct Offer<C> {
    /// What the screen does with it.
    pub command: C,
    /// The keys that give it; the first is the one the hint line shows.
    pub keys: &'static [Key],
    /// What the hint line and the help say it does; `None` keeps it out of both (moves, which
    /// every list has).
    pub what: Option<&'static str>,
    /// How the hint names its keys, when not by the first one (`↑↓` for a pair of moves, `⌫`).
    pub label: Option<&'static str>,
}

impl<C> Offer<C> {
    /// A command said in the hint line and the help.
    pub const fn new(command: C, keys: &'static [Key], what: &'static str) -> Self {
        Self {
            command,
            keys,
            what: Some(what),
            label: None,
        }
    }

    /// A command said in the hint line and the help with its keys named `label`.
    pub const fn labelled(
        command: C,
        keys: &'static [Key],
        label: &'static str,
        what: &'static str,
    ) -> Self {
        Self {
            command,
            keys,
            what: Some(what),
            label: Some(label),
        }
    }

    /// A command given by its keys but not said (cursor moves).
    pub const fn quiet(command: C, keys: &'static [Key]) -> Self {
        Self {
            command,
            keys,
            what: None,
            label: None,
        }
    }
}

/// A move of a list's cursor: every list screen offers them beside its own commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// One row up.
    Up,
    /// One row down.
    Down,
    /// To the first row.
    Top,
    /// To the last row.
    Bottom,
}

impl Move {
    /// Moves `cursor` over a list of `len` rows.
    pub fn apply(self, cursor: &mut Cursor, len: usize) {
        let delta = match self {
            Move::Up => -1,
            Move::Down => 1,
            Move::Top => isize::MIN / 2,
            Move::Bottom => isize::MAX / 2,
        };
        cursor.step(delta, len);
    }
}

/// The keys of moving a cursor up and down a list.
pub const UP: &[Key] = &[Key::code(KeyCode::Up), Key::char('k')];
/// See [`UP`].
pub const DOWN: &[Key] = &[Key::code(KeyCode::Down), Key::char('j')];
/// See [`UP`].
pub const TOP: &[Key] = &[Key::code(KeyCode::Home), Key::char('g')];
/// See [`UP`].
pub const BOTTOM: &[Key] = &[Key::code(KeyCode::End), Key::char('G')];
/// The keys that close a screen.
pub const CLOSE: &[Key] = &[Key::code(KeyCode::Esc), Key::char('q')];

/// The command `key` gives among `offers`, if any.
pub fn find<C: Copy>(offers: &[Offer<C>], key: &KeyEvent) -> Option<C> {
    let key = Key::from_event(key);
    offers
        .iter()
        .find(|offer| offer.keys.contains(&key))
        .map(|offer| offer.command)
}

/// The hint line of `offers`: each said command as its first key and its words, in order,
/// joined by ` · ` (`enter return · e adjust environment · esc close`).
pub fn hint<C: Copy>(offers: &[Offer<C>]) -> String {
    hint_where(offers, |_| true)
}

/// The hint line of the `offers` whose command passes `shown` (what the screen lets you do now).
pub fn hint_where<C: Copy>(offers: &[Offer<C>], shown: impl Fn(C) -> bool) -> String {
    offers
        .iter()
        .filter(|offer| shown(offer.command))
        .filter_map(|offer| {
            let keys = match offer.label {
                Some(label) => label.to_owned(),
                None => offer.keys.first()?.to_string(),
            };
            Some(format!("{keys} {}", offer.what?))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::key;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Cmd {
        Down,
        Open,
        Close,
    }

    const OFFERS: &[Offer<Cmd>] = &[
        Offer::quiet(Cmd::Down, DOWN),
        Offer::new(Cmd::Open, &[Key::code(KeyCode::Enter)], "open it"),
        Offer::new(Cmd::Close, CLOSE, "close"),
    ];

    #[test]
    fn a_key_finds_its_command_and_the_hint_says_only_what_is_said() {
        assert_eq!(find(OFFERS, &key("j")), Some(Cmd::Down));
        assert_eq!(find(OFFERS, &key("down")), Some(Cmd::Down));
        assert_eq!(find(OFFERS, &key("enter")), Some(Cmd::Open));
        assert_eq!(find(OFFERS, &key("q")), Some(Cmd::Close));
        assert_eq!(find(OFFERS, &key("x")), None);
        assert_eq!(hint(OFFERS), "enter open it · esc close");
        assert_eq!(hint_where(OFFERS, |c| c != Cmd::Open), "esc close");
    }

    #[test]
    fn a_label_names_the_keys_in_the_hint() {
        const LABELLED: &[Offer<Cmd>] = &[
            Offer::labelled(Cmd::Down, DOWN, "↑↓", "choose"),
            Offer::labelled(Cmd::Close, &[Key::code(KeyCode::Backspace)], "⌫", "back"),
        ];
        assert_eq!(hint(LABELLED), "↑↓ choose · ⌫ back");
        assert_eq!(find(LABELLED, &key("backspace")), Some(Cmd::Close));
    }
}
