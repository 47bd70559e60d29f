//! The integrity check of the selected timeline (`T`): a tamper scan of the stored log's hash
//! chain, of the records since the last scan (`r`) or of all of them (`f`), and a validation
//! of the timeline's events and data entries against the verified log (`v`), each result shown
//! with what it found. Opening it runs a recent scan.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::counted;
use crate::model::TimelineId;
use crate::service::{
    FindingKind, IntegrityQuery, IntegrityReport, ScanDepth, TamperQuery, TamperReport,
};
use crate::tui::action::Slot;
use crate::tui::effect::{Call, Effect, Outcome};
use crate::tui::keymap::Key;
use crate::tui::offers::{self, CLOSE, Offer, UP};
use crate::tui::theme::Palette;
use crate::tui::widgets::{centered, ellipsize, fmt_time, modal};

/// What the screen does with a key.
#[derive(Clone, Copy, Debug)]
pub enum Command {
    /// Scan the recent records.
    Recent,
    /// Scan the whole log.
    Full,
    /// Validate the timeline's data against the log.
    Validate,
    /// Scroll down.
    Down,
    /// Scroll up.
    Up,
    /// Close the screen.
    Close,
}

/// The keys of the integrity screen: its hint line and the help are written from these.
pub const OFFERS: &[Offer<Command>] = &[
    Offer::new(Command::Recent, &[Key::char('r')], "recent scan"),
    Offer::new(Command::Full, &[Key::char('f')], "full scan"),
    Offer::new(Command::Validate, &[Key::char('v')], "validate its data"),
    Offer::new(
        Command::Down,
        &[Key::char('j'), Key::code(KeyCode::Down)],
        "scroll",
    ),
    Offer::quiet(Command::Up, UP),
    Offer::new(Command::Close, CLOSE, "close"),
];

/// What the screen is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Running {
    /// A tamper scan of this depth.
    Scan(ScanDepth),
    /// A validation.
    Validation,
}

/// The integrity check of one timeline.
#[derive(Debug)]
pub struct IntegrityScreen {
    /// The timeline.
    pub timeline: TimelineId,
    /// Its name, for the title.
    pub name: String,
    /// What runs now, if anything.
    pub running: Option<Running>,
    /// The depth of the last scan shown.
    pub depth: ScanDepth,
    /// The last scan's report.
    pub scan: Option<TamperReport>,
    /// The last validation's report.
    pub validation: Option<IntegrityReport>,
    /// Why the last check could not be made, or a word about the last key.
    pub note: Option<String>,
    /// Lines scrolled.
    pub scroll: u16,
}

impl IntegrityScreen {
    /// The screen of `timeline` (named `name`), nothing run yet.
    pub fn new(timeline: TimelineId, name: String) -> Self {
        Self {
            timeline,
            name,
            running: None,
            depth: ScanDepth::Recent,
            scan: None,
            validation: None,
            note: None,
            scroll: 0,
        }
    }

    /// Starts a tamper scan of `depth`: the call to send.
    pub fn scan(&mut self, depth: ScanDepth) -> Call {
        self.running = Some(Running::Scan(depth));
        self.depth = depth;
        self.note = None;
        Call::Tamper(TamperQuery {
            timeline_id: self.timeline.clone(),
            scan_depth: depth,
        })
    }

    /// Starts a validation as of now: the call to send.
    pub fn validate(&mut self) -> Call {
        self.running = Some(Running::Validation);
        self.note = None;
        Call::Validate(IntegrityQuery {
            timeline_id: self.timeline.clone(),
            timestamp: None,
        })
    }

    /// A scan's report arrived.
    pub fn scanned(&mut self, report: TamperReport) {
        self.running = None;
        self.scan = Some(report);
    }

    /// A validation's report arrived.
    pub fn validated(&mut self, report: IntegrityReport) {
        self.running = None;
        self.validation = Some(report);
    }

    /// The check failed with `why`; true when the screen shows it.
    pub fn failed(&mut self, slot: Slot, why: &str) -> bool {
        if slot != Slot::Integrity {
            return false;
        }
        self.running = None;
        self.note = Some(why.to_owned());
        true
    }

    /// A key: `r`, `f` and `v` start a check (one at a time), j/k scroll, esc or q closes.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        let start = |s: &mut Self, call: fn(&mut Self) -> Call| {
            if s.running.is_some() {
                s.note = Some("One check at a time: wait for this one's answer.".into());
                Outcome::keep()
            } else {
                Outcome::with(Effect::Call(call(s)))
            }
        };
        match offers::find(OFFERS, &key) {
            Some(Command::Close) => Outcome::close(),
            Some(Command::Recent) => start(self, |s| s.scan(ScanDepth::Recent)),
            Some(Command::Full) => start(self, |s| s.scan(ScanDepth::Full)),
            Some(Command::Validate) => start(self, Self::validate),
            Some(Command::Down) => {
                self.scroll = self.scroll.saturating_add(1);
                Outcome::keep()
            }
            Some(Command::Up) => {
                self.scroll = self.scroll.saturating_sub(1);
                Outcome::keep()
            }
            None => Outcome::keep(),
        }
    }

    /// Draws the screen over `area`.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        // As tall as what it found needs (with the keys), scrolling when the screen is not.
        let width = area.width.saturating_sub(4).min(110);
        let text = Paragraph::new(self.lines(p)).wrap(Wrap { trim: false });
        let needed = u16::try_from(text.line_count(width.saturating_sub(2))).unwrap_or(u16::MAX);
        let rect = centered(
            area,
            width,
            needed.saturating_add(3).min(area.height.saturating_sub(2)),
        );
        let mut title = format!("Integrity of {} ({})", self.name, self.timeline);
        match self.running {
            Some(Running::Scan(ScanDepth::Recent)) => title.push_str(" · scanning recent records…"),
            Some(Running::Scan(ScanDepth::Full)) => title.push_str(" · scanning the whole log…"),
            Some(Running::Validation) => title.push_str(" · validating…"),
            None => {}
        }
        let inner = modal(frame, rect, &title, p);
        let [body, keys] =
            Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
        self.scroll = self.scroll.min(needed.saturating_sub(body.height));
        frame.render_widget(text.scroll((self.scroll, 0)), body);
        frame.render_widget(
            Paragraph::new(Span::styled(
                ellipsize(&offers::hint(OFFERS), usize::from(inner.width)),
                p.dim,
            )),
            keys,
        );
    }

    /// What the checks found: the scan, then the validation, then why the last one failed.
    fn lines(&self, p: &Palette) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        if let Some(why) = &self.note {
            out.push(Line::from(Span::styled(why.clone(), p.warn)));
            out.push(Line::default());
        }
        let depth = match self.depth {
            ScanDepth::Recent => "recent records",
            ScanDepth::Full => "whole log",
        };
        match &self.scan {
            None => out.push(Line::from(Span::styled(
                match self.running {
                    Some(Running::Scan(_)) => "Tamper scan: running…",
                    _ => "Tamper scan: not run yet (r recent, f full).",
                },
                p.dim,
            ))),
            Some(scan) => {
                let (mark, style) = if scan.tampering_detected {
                    ("✗ TAMPERED", p.error)
                } else {
                    ("✓ intact", p.ok)
                };
                out.push(Line::from(vec![
                    Span::styled(format!("Tamper scan ({depth}): "), p.title),
                    Span::styled(mark, style),
                ]));
                out.push(Line::from(Span::styled(scan.details.clone(), p.text)));
                let mut facts = format!(
                    "{} checked from record {} · head {}",
                    counted(scan.records_checked, "record"),
                    scan.from_seq,
                    scan.head_seq
                );
                if let Some(from) = scan.chain_from {
                    facts.push_str(&format!(" · chained as written from record {from}"));
                }
                out.push(Line::from(Span::styled(facts, p.dim)));
                if !scan.findings.is_empty() {
                    out.push(Line::from(Span::styled(
                        format!("{}:", counted(scan.findings.len() as u64, "finding")),
                        p.title,
                    )));
                }
                for f in &scan.findings {
                    let kind = match f.kind {
                        FindingKind::Modified => "modified",
                        FindingKind::Gap => "gap",
                        FindingKind::Undecodable => "undecodable",
                        FindingKind::Truncated => "truncated",
                        FindingKind::KeyMismatch => "key mismatch",
                        FindingKind::Rechained => "re-chained",
                    };
                    let mut what = format!("  ✗ record {} {kind}", f.seq);
                    if let Some(op) = &f.op {
                        what.push_str(&format!(" · {op}"));
                    }
                    if let Some(at) = &f.written_at {
                        what.push_str(&format!(" · written {}", fmt_time(at)));
                    }
                    out.push(Line::from(Span::styled(what, p.error)));
                    out.push(Line::from(Span::styled(
                        format!("    {}", f.reason),
                        p.text,
                    )));
                }
            }
        }
        out.push(Line::default());
        match &self.validation {
            None => out.push(Line::from(Span::styled(
                match self.running {
                    Some(Running::Validation) => "Validation: running…",
                    _ => "Validation: not run yet (v).",
                },
                p.dim,
            ))),
            Some(v) => {
                let style = if v.failures.is_empty() { p.ok } else { p.error };
                out.push(Line::from(vec![
                    Span::styled(
                        format!("Validation as of {}: ", fmt_time(&v.timestamp)),
                        p.title,
                    ),
                    Span::styled(format!("{} integrity", v.integrity_score), style),
                ]));
                let examined = if v.examined == 0 {
                    "nothing to examine: no event or data entry at or before that time".to_owned()
                } else {
                    format!(
                        "{} of {} examined pass (events and data entries)",
                        v.passed, v.examined
                    )
                };
                out.push(Line::from(Span::styled(examined, p.dim)));
                for f in &v.failures {
                    let seq = f.seq.map(|s| format!(" (record {s})")).unwrap_or_default();
                    out.push(Line::from(Span::styled(
                        format!("  ✗ {}{seq}: {}", f.id, f.reason),
                        p.error,
                    )));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::TamperFinding;
    use crate::tui::unit::{key, palette, screen};

    #[test]
    fn one_check_at_a_time_and_findings_are_listed() {
        let mut s = IntegrityScreen::new(TimelineId::primary(), "Primary".into());
        let first = s.key(key("f"));
        assert!(matches!(
            first.effects.as_slice(),
            [Effect::Call(Call::Tamper(q))] if q.scan_depth == ScanDepth::Full
        ));
        assert!(s.key(key("v")).effects.is_empty(), "waits for the scan");
        s.scanned(TamperReport {
            status: "complete".into(),
            tampering_detected: true,
            details: "Record 7 was modified after it was written".into(),
            findings: vec![TamperFinding {
                seq: 7,
                kind: FindingKind::Modified,
                written_at: None,
                op: Some("add_events".into()),
                timelines: vec![TimelineId::primary()],
                reason: "its link does not verify".into(),
            }],
            records_checked: 12,
            from_seq: 1,
            head_seq: 12,
            chain_from: Some(1),
            findings_not_listed: 0,
            recorded_seq: Some(13),
        });
        let p = palette();
        let text = screen(100, 30, |f| s.render(f, f.area(), &p));
        assert!(
            text.contains("Tamper scan (whole log): ✗ TAMPERED"),
            "{text}"
        );
        assert!(text.contains("✗ record 7 modified · add_events"), "{text}");
        assert!(matches!(
            s.key(key("v")).effects.as_slice(),
            [Effect::Call(Call::Validate(_))]
        ));
    }
}
