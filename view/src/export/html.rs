//! An exported session as one self-contained HTML page: its CSS and its
//! script inline, the chart an inline SVG, no request to anywhere (a
//! `Content-Security-Policy` of `default-src 'none'` says so to the
//! browser too, so even a link or an image the model wrote loads nothing).
//! Tool calls fold open (`<details>`), edit diffs are coloured.

use super::chart::{self, Chart};
use super::{Cut, Event, Item};

/// The page's style.
const CSS: &str = include_str!("page.css");
/// The page's script: buttons that open and fold every call.
const SCRIPT: &str = include_str!("page.js");

/// The page up to the conversation: the head, the title, the chart with
/// its legend and the figures under it.
pub fn start(title: &str, chart: &Chart, figures: &str) -> String {
    let title = escaped(title);
    let mut legend = String::new();
    for (word, colour) in [
        ("context size", chart::CONTEXT_COLOUR),
        ("cumulative cost", chart::COST_COLOUR),
    ] {
        legend.push_str(&format!(
            "<span class=\"key\"><i style=\"background:{colour}\"></i>{word}</span>"
        ));
    }
    for event in [
        Event::Compaction,
        Event::Memory,
        Event::Model,
        Event::Rewind,
    ] {
        let n = chart.marks().iter().filter(|m| m.event == event).count();
        legend.push_str(&format!(
            "<span class=\"key\"><i class=\"dash\" style=\"border-color:{}\"></i>{} {} ({n})</span>",
            chart::colour(event),
            event.letter(),
            match event {
                Event::Model => "model switch",
                other => other.word(),
            }
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"revolve export\">\n\
         <title>revolve · {title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
         <header><h1>{title}</h1></header>\n\
         <section class=\"overview\">\n<figure>{}\n<figcaption>{legend}</figcaption></figure>\n\
         <p class=\"figures\">{}</p>\n\
         <p class=\"tools\"><button type=\"button\" id=\"open-all\">open every call</button> \
         <button type=\"button\" id=\"fold-all\">fold every call</button></p>\n</section>\n<main>\n",
        chart.svg(),
        escaped(figures),
    )
}

/// Appends `item` as HTML to `out`.
pub fn item(item: &Item, out: &mut String) {
    match item {
        Item::Start { about, .. } => {
            out.push_str("<p class=\"about\">");
            push_escaped(out, about);
            out.push_str("</p>\n");
        }
        Item::System(cut) => {
            out.push_str("<details class=\"system\"><summary>system prompt</summary>");
            pre(out, "", cut);
            out.push_str("</details>\n");
        }
        Item::User {
            turn,
            at,
            from,
            text,
        } => {
            out.push_str(&format!(
                "<section class=\"user\" id=\"turn-{turn}\"><h2>{turn}. You"
            ));
            if let Some(from) = from {
                out.push_str(" <small>(a message from ");
                push_escaped(out, from);
                out.push_str(")</small>");
            }
            out.push_str(" <time>");
            push_escaped(out, &revolve_core::text::when(*at));
            out.push_str("</time></h2><div class=\"text\">");
            push_escaped(out, text);
            out.push_str("</div></section>\n");
        }
        Item::Answer {
            text,
            thinking,
            cut,
            ..
        } => {
            out.push_str("<section class=\"answer\">");
            if let Some(thinking) = thinking {
                out.push_str(
                    "<details class=\"thinking\"><summary>thinking</summary><div class=\"text\">",
                );
                push_escaped(out, thinking);
                out.push_str("</div></details>");
            }
            out.push_str("<div class=\"md\">");
            rendered(out, text);
            out.push_str("</div>");
            if let Some(cut) = cut {
                out.push_str(&format!("<p class=\"cut\">({cut})</p>"));
            }
            out.push_str("</section>\n");
        }
        Item::Call {
            name,
            brief,
            arguments,
            result,
            error,
            diffs,
        } => {
            out.push_str(if *error {
                "<details class=\"call error\"><summary><b>"
            } else {
                "<details class=\"call\"><summary><b>"
            });
            push_escaped(out, name);
            out.push_str("</b> <code>");
            push_escaped(out, brief);
            out.push_str("</code>");
            if result.is_none() {
                out.push_str(" <small>(no result)</small>");
            }
            out.push_str("</summary>");
            if !arguments.head.is_empty() {
                pre(out, "arguments", arguments);
            }
            if let Some(result) = result {
                pre(out, "result", result);
            }
            out.push_str("</details>\n");
            for (path, diff) in diffs {
                out.push_str("<div class=\"edit\"><div class=\"path\">");
                push_escaped(out, path);
                out.push_str("</div><pre class=\"diff\">");
                diff_lines(out, diff);
                out.push_str("</pre></div>\n");
            }
        }
        Item::Note { event, text, more } => {
            let word = event.map_or("note", |e| e.word());
            out.push_str(&format!("<div class=\"note {word}\"><b>{word}</b> "));
            push_escaped(out, text);
            if let Some(more) = more {
                out.push_str("<details><summary>details</summary>");
                pre(out, "", more);
                out.push_str("</details>");
            }
            out.push_str("</div>\n");
        }
    }
}

/// The end of the page.
pub fn end() -> String {
    format!("</main>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n")
}

/// `text` with `&`, `<`, `>` and `"` escaped.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

/// Appends `text` to `out`, `&`, `<`, `>` and `"` escaped.
fn push_escaped(out: &mut String, text: &str) {
    let mut last = 0;
    for (i, b) in text.bytes().enumerate() {
        let with = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => continue,
        };
        out.push_str(&text[last..i]);
        out.push_str(with);
        last = i + 1;
    }
    out.push_str(&text[last..]);
}

/// The model's Markdown as HTML. Raw HTML is shown as text; a link is
/// its text with the address after it, an image its description and
/// address: nothing in the page points anywhere.
fn rendered(out: &mut String, text: &str) {
    use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};
    let mut targets: Vec<CowStr<'_>> = Vec::new();
    let events = Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH)
        .filter_map(|event| match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
            Event::Start(Tag::Link { dest_url, .. }) => {
                targets.push(dest_url);
                None
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                targets.push(dest_url);
                Some(Event::Text("[image: ".into()))
            }
            Event::End(TagEnd::Link) => {
                let url = targets.pop().unwrap_or(CowStr::Borrowed(""));
                Some(Event::Text(format!(" <{url}>").into()))
            }
            Event::End(TagEnd::Image) => {
                let url = targets.pop().unwrap_or(CowStr::Borrowed(""));
                Some(Event::Text(format!(" <{url}>]").into()))
            }
            other => Some(other),
        });
    pulldown_cmark::html::push_html(out, events);
}

/// `cut` as a `<pre>` of `class`, the gap marked.
fn pre(out: &mut String, class: &str, cut: &Cut) {
    out.push_str(&format!("<pre class=\"{class}\">"));
    push_escaped(out, &cut.head);
    if cut.omitted > 0 {
        out.push_str("\n<span class=\"gap\">");
        push_escaped(out, &cut.gap());
        out.push_str("</span>\n");
        push_escaped(out, &cut.tail);
    }
    out.push_str("</pre>");
}

/// A unified diff, each line in a span coloured by its kind.
fn diff_lines(out: &mut String, diff: &str) {
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            "meta"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            "same"
        };
        out.push_str(&format!("<span class=\"{class}\">"));
        push_escaped(out, line);
        out.push_str("</span>");
    }
}
