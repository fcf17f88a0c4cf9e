//! The chart above an HTML export: the context size and the cumulative
//! cost after each turn, with the session's changes marked, as an inline
//! SVG written here (no script, no network).

use std::fmt::Write as _;

use revolve_core::record::Record;

use super::Event;
use crate::limits::{CHART_HEIGHT, CHART_POINTS, CHART_WIDTH};

/// The record kinds a [`Chart`] reads: the shell may skip every other
/// line of a log unparsed when it folds one.
pub const CHART_KINDS: [&str; 9] = [
    "header",
    "totals",
    "compacted",
    "pruned",
    "memory_changed",
    "memory_undone",
    "model_changed",
    "resumed",
    "rewound",
];

/// What the chart shows, folded from a session's records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chart {
    /// After each turn: its number, the context then (tokens) and the
    /// cost so far (nano-dollars).
    points: Vec<(u64, u64, u64)>,
    /// The changes, at the turn after which they happened.
    marks: Vec<Mark>,
    /// Whether some request had no known price.
    unpriced: bool,
    /// The model asked, to tell a resume that switched it.
    model: String,
    /// The session's name (or id), from its first header.
    title: Option<String>,
}

/// A change marked on the chart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The turns answered before it.
    pub turn: u64,
    /// What it was.
    pub event: Event,
    /// What the mark's tooltip says.
    pub text: String,
}

/// The colour of each series and mark (the page's CSS uses the same).
pub(super) const CONTEXT_COLOUR: &str = "#1f6feb";
/// The cost line's colour.
pub(super) const COST_COLOUR: &str = "#d97706";

/// The colour a mark of `event` is drawn in.
pub(super) fn colour(event: Event) -> &'static str {
    match event {
        Event::Compaction => "#8250df",
        Event::Memory => "#1a7f37",
        Event::Model => "#0e7490",
        Event::Rewind => "#cf222e",
    }
}

impl Chart {
    /// Folds one record in (any kind: those not in [`CHART_KINDS`] change
    /// nothing).
    pub fn push(&mut self, record: &Record) {
        let turn = self.points.last().map_or(0, |p| p.0);
        let (event, text) = match record {
            Record::Header(h) => {
                self.model.clone_from(&h.model);
                if self.title.is_none() {
                    self.title = Some(h.name.clone().unwrap_or_else(|| h.id.clone()));
                }
                return;
            }
            Record::Totals(t) => {
                self.unpriced |= t.unpriced;
                match self.points.last_mut() {
                    // The same turn counted again (a compaction's totals).
                    Some(last) if last.0 == t.turns => *last = (t.turns, t.last_context, t.cost),
                    _ => self.points.push((t.turns, t.last_context, t.cost)),
                }
                return;
            }
            Record::Compacted(c) => (
                Event::Compaction,
                format!("compaction: {} messages summarized", c.summarized),
            ),
            Record::Pruned(p) => (
                Event::Compaction,
                format!("compaction: {} tool results pruned", p.messages.len()),
            ),
            Record::MemoryChanged(m) => (Event::Memory, format!("memory changed by {}", m.by)),
            Record::MemoryUndone(_) => (Event::Memory, "memory undone".to_owned()),
            Record::ModelChanged(m) => {
                self.model.clone_from(&m.model);
                (Event::Model, format!("model {}", m.model))
            }
            Record::Resumed(r) if r.model != self.model => {
                self.model.clone_from(&r.model);
                (Event::Model, format!("resumed with model {}", r.model))
            }
            Record::Rewound(r) => (Event::Rewind, format!("rewound {} turn(s)", r.turns)),
            _ => return,
        };
        // A pruning and the summary after it are one compaction.
        if self
            .marks
            .last()
            .is_some_and(|m| m.turn == turn && m.event == event && event == Event::Compaction)
        {
            return;
        }
        self.marks.push(Mark { turn, event, text });
    }

    /// The session's name, or its id (none before its header).
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The figures under the chart: turns, the last context, the cost and
    /// how many of each change.
    pub fn figures(&self) -> String {
        let (turns, ctx, cost) = self.points.last().copied().unwrap_or_default();
        let mut out = format!(
            "{turns} turn{} · context after the last {} tokens · cost {}{}",
            if turns == 1 { "" } else { "s" },
            crate::tokens(ctx),
            dollars(cost),
            if self.unpriced {
                " (and requests of no known price)"
            } else {
                ""
            }
        );
        for event in [
            Event::Compaction,
            Event::Memory,
            Event::Model,
            Event::Rewind,
        ] {
            let n = self.marks.iter().filter(|m| m.event == event).count();
            if n > 0 {
                out.push_str(&format!(" · {n} {}", event.word()));
                out.push_str(match (event, n) {
                    (Event::Compaction, 1) => "",
                    (Event::Compaction, _) => "s",
                    (Event::Memory, 1) => " change",
                    (Event::Memory, _) => " changes",
                    (Event::Model, 1) => " switch",
                    (Event::Model, _) => " switches",
                    (Event::Rewind, 1) => "",
                    (Event::Rewind, _) => "s",
                });
            }
        }
        out
    }

    /// The changes marked, in order.
    pub fn marks(&self) -> &[Mark] {
        &self.marks
    }

    /// The chart as an inline SVG element.
    pub fn svg(&self) -> String {
        let (w, h) = (CHART_WIDTH as f64, CHART_HEIGHT as f64);
        let (left, right, top, bottom) = (64.0, 72.0, 24.0, 34.0);
        let (pw, ph) = (w - left - right, h - top - bottom);
        let points = thinned(&self.points);
        let last_turn = self.points.last().map_or(1, |p| p.0.max(1));
        let max_ctx = nice(points.iter().map(|p| p.1).max().unwrap_or(0).max(1));
        let max_cost = nice(points.iter().map(|p| p.2).max().unwrap_or(0).max(1));
        let x = |turn: u64| left + pw * turn as f64 / last_turn as f64;
        let y = |v: u64, max: u64| top + ph - ph * v as f64 / max as f64;
        let mut s = String::new();
        let _ = write!(
            s,
            "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" \
             width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"context size and cumulative cost per turn\">\
             <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>"
        );
        for i in 0..=4 {
            let gy = top + ph * i as f64 / 4.0;
            let ctx = max_ctx * (4 - i) / 4;
            let cost = max_cost * (4 - i) / 4;
            let _ = write!(
                s,
                "<line x1=\"{left}\" y1=\"{gy:.1}\" x2=\"{:.1}\" y2=\"{gy:.1}\" stroke=\"#d0d7de\" stroke-width=\"1\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"axis\" fill=\"{CONTEXT_COLOUR}\">{}</text>\
                 <text x=\"{:.1}\" y=\"{:.1}\" class=\"axis\" fill=\"{COST_COLOUR}\">{}</text>",
                left + pw,
                left - 6.0,
                gy + 4.0,
                crate::tokens(ctx),
                left + pw + 6.0,
                gy + 4.0,
                dollars(cost),
            );
        }
        let _ = write!(
            s,
            "<text x=\"{left}\" y=\"{:.1}\" class=\"axis\">turn 0</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"axis\">turn {last_turn}</text>",
            h - 10.0,
            left + pw,
            h - 10.0
        );
        self.marks_svg(&mut s, &x, top, ph);
        if !points.is_empty() {
            let ctx: Vec<String> = points
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1, max_ctx)))
                .collect();
            let cost: Vec<String> = points
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.2, max_cost)))
                .collect();
            let base = top + ph;
            let _ = write!(
                s,
                "<polygon points=\"{left},{base:.1} {} {:.1},{base:.1}\" fill=\"{CONTEXT_COLOUR}\" fill-opacity=\"0.15\"/>\
                 <polyline points=\"{}\" fill=\"none\" stroke=\"{CONTEXT_COLOUR}\" stroke-width=\"3\" class=\"context\"><title>context size (tokens)</title></polyline>\
                 <polyline points=\"{}\" fill=\"none\" stroke=\"{COST_COLOUR}\" stroke-width=\"3\" class=\"cost\"><title>cumulative cost{}</title></polyline>",
                ctx.join(" "),
                x(points[points.len() - 1].0),
                ctx.join(" "),
                cost.join(" "),
                if self.unpriced { " (some requests had no known price)" } else { "" },
            );
        }
        s.push_str("</svg>");
        s
    }

    /// The marks: a dashed line each, a letter above it, the text as its
    /// tooltip (at most [`CHART_POINTS`] of them).
    fn marks_svg(&self, s: &mut String, x: &dyn Fn(u64) -> f64, top: f64, ph: f64) {
        for mark in self.marks.iter().take(CHART_POINTS) {
            let mx = x(mark.turn);
            let c = colour(mark.event);
            let letter = mark.event.letter();
            let _ = write!(
                s,
                "<g class=\"mark {}\"><title>after turn {}: {}</title>\
                 <line x1=\"{mx:.1}\" y1=\"{top}\" x2=\"{mx:.1}\" y2=\"{:.1}\" stroke=\"{c}\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/>\
                 <text x=\"{mx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"mark-letter\" fill=\"{c}\">{letter}</text></g>",
                mark.event.word(),
                mark.turn,
                super::html::escaped(&mark.text),
                top + ph,
                top - 8.0,
            );
        }
    }
}

/// At most [`CHART_POINTS`] points: a long session's turns are taken in
/// even steps, the last always kept, each step showing its largest context.
fn thinned(points: &[(u64, u64, u64)]) -> Vec<(u64, u64, u64)> {
    if points.len() <= CHART_POINTS {
        return points.to_vec();
    }
    let step = points.len().div_ceil(CHART_POINTS);
    points
        .chunks(step)
        .map(|chunk| {
            let last = chunk[chunk.len() - 1];
            let ctx = chunk.iter().map(|p| p.1).max().unwrap_or(last.1);
            (last.0, ctx, last.2)
        })
        .collect()
}

/// `n` rounded up to 1, 2 or 5 times a power of ten, so the axis reads in
/// round steps.
fn nice(n: u64) -> u64 {
    let mut unit = 1u64;
    loop {
        for m in [1, 2, 5] {
            if let Some(v) = unit.checked_mul(m) {
                if v >= n {
                    return v;
                }
            }
        }
        match unit.checked_mul(10) {
            Some(u) => unit = u,
            None => return n,
        }
    }
}

/// Nano-dollars as `$0.0123` (four decimals below a dollar, two above).
pub(super) fn dollars(nano: u64) -> String {
    let d = nano as f64 / 1e9;
    if d < 1.0 {
        format!("${d:.4}")
    } else {
        format!("${d:.2}")
    }
}
