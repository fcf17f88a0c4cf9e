//! Compaction decisions: when to compact, where to cut, what to prune, and
//! the prompt that asks for working notes. All pure; the session machine
//! ([`crate::Session`]) carries them out through records and commands.
//!
//! The order of the spec: first prune (no model call): in the part that would
//! be dropped anyway, every tool result over `prune-result-chars` becomes its
//! first [`HEAD_CHARS`] and last [`TAIL_CHARS`] characters with a line saying
//! how much is gone. Measure again; only if the history still does not fit is
//! the part before the last [`KEEP_TURNS`] turns summarized into working
//! notes, and the session goes on in a fresh file.

use std::ops::Range;

use crate::record::{Message, Role, Totals};
use crate::tools::{self, HEAD_CHARS, TAIL_CHARS};

/// Turns kept verbatim by a compaction.
pub const KEEP_TURNS: usize = 3;

/// The default of `prune-result-chars`.
pub const PRUNE_CHARS: usize = 16_000;

/// What a pruned result says in its middle line, after the count.
const PRUNED_NOTE: &str = " by compaction (the result was pruned)";

/// Slack above head + tail in what counts as a pruned result.
const SLACK: usize = 200;

/// The turns of a history: each starts at a user message and runs to the
/// next one. Messages before the first user message (notes of an earlier
/// compaction) belong to no turn.
pub fn turns(messages: &[Message]) -> Vec<Range<usize>> {
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User && !is_notes(m))
        .map(|(i, _)| i)
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &start)| start..starts.get(k + 1).copied().unwrap_or(messages.len()))
        .collect()
}

/// Where a compaction cuts and what it prunes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The first message kept verbatim: the start of the third turn from
    /// the end (0 when there are at most three turns: nothing to summarize).
    pub cut: usize,
    /// Tool results before `cut` longer than the threshold, by index.
    pub prune: Vec<usize>,
}

impl Plan {
    /// The plan for a history: keep the last [`KEEP_TURNS`] turns, prune
    /// results over `prune_chars` before them. Linear in the history.
    pub fn of(messages: &[Message], prune_chars: usize) -> Plan {
        Plan::keeping(messages, prune_chars, KEEP_TURNS)
    }

    /// [`Plan::of`], keeping the last `keep` turns (at least one) instead:
    /// the window's way of giving way when three turns do not fit.
    pub fn keeping(messages: &[Message], prune_chars: usize, keep: usize) -> Plan {
        let mut cut = turn_start_from_end(messages, keep.max(1));
        // Notes of an earlier compaction alone are nothing to summarize.
        if messages[..cut].iter().all(is_notes) {
            cut = 0;
        }
        let prune = messages[..cut]
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Tool && prunable(&m.content, prune_chars))
            .map(|(i, _)| i)
            .collect();
        Plan { cut, prune }
    }

    /// Whether there is anything before the kept turns to summarize.
    pub fn summarizes(&self) -> bool {
        self.cut > 0
    }
}

/// The index where the `n`th turn from the end starts, or 0.
fn turn_start_from_end(messages: &[Message], n: usize) -> usize {
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::User && !is_notes(m))
        .nth(n - 1)
        .map_or(0, |(i, _)| i)
}

/// Whether a result is long enough to prune under `prune_chars`: longer
/// than that, and not already a pruned result (so pruning never cuts a
/// pruned result again, whatever the setting).
pub fn prunable(content: &str, prune_chars: usize) -> bool {
    // A character is at least a byte: short texts need no counting, and
    // counting stops early, since only "longer than" matters.
    let longer = content.len() > prune_chars && content.chars().nth(prune_chars).is_some();
    longer && !already_pruned(content) && prune_to(content, prune_chars) != content
}

/// A result pruning has cut already: its note, and no longer than pruning
/// at the default leaves one.
fn already_pruned(content: &str) -> bool {
    content.contains(PRUNED_NOTE) && content.len() <= (HEAD_CHARS + TAIL_CHARS + SLACK) * 4
}

/// A result as pruning at the default leaves it: its first [`HEAD_CHARS`]
/// and last [`TAIL_CHARS`] characters. Idempotent.
pub fn prune(content: &str) -> String {
    tools::cut(content, HEAD_CHARS, TAIL_CHARS, PRUNED_NOTE)
}

/// Room kept for the note in the middle of a pruned result.
const NOTE_CHARS: usize = 100;

/// A result as pruning under `prune_chars` leaves it: at most that many
/// characters, note included: the head (at most [`HEAD_CHARS`]) four fifths
/// of what is left beside the note, the tail (at most [`TAIL_CHARS`]) the
/// rest. At the default (16,000) that is [`prune`]; under about 100 only the
/// note is left.
pub(crate) fn prune_to(content: &str, prune_chars: usize) -> String {
    if content.chars().nth(prune_chars).is_none() {
        return content.to_owned();
    }
    let room = prune_chars.saturating_sub(NOTE_CHARS);
    let head = HEAD_CHARS.min(room * 4 / 5);
    let tail = TAIL_CHARS.min(room - head);
    tools::cut(content, head, tail, PRUNED_NOTE)
}

/// The room one full turn can still need, in tokens: a tenth of the window,
/// at least 2,048 and at most 32,000, and never more than a quarter of the
/// window (a 4,096-token local model keeps 1,024 for its answer).
/// Compaction starts when the last context reading plus this room reaches
/// the window.
pub fn room(window: u64) -> u64 {
    (window / 10).clamp(2_048, 32_000).min(window / 4)
}

/// The context reading at which a session compacts.
pub fn point(window: u64) -> u64 {
    window.saturating_sub(room(window))
}

/// Whether a session whose last request read `last_context` tokens must
/// compact before its next request.
pub fn due(last_context: u64, window: u64) -> bool {
    window > 0 && last_context >= point(window)
}

/// Whether the status line names the compaction point: once the reading is
/// within 20% of it.
pub fn near(last_context: u64, window: u64) -> bool {
    window > 0 && last_context.saturating_mul(5) >= point(window).saturating_mul(4)
}

/// The documented estimate of what pruning saved: a token per four
/// characters removed.
pub(crate) fn saved_tokens(before: &str, after: &str) -> u64 {
    (before.len().saturating_sub(after.len()) as u64) / 4
}

/// How many bytes of request body are taken for one token before the
/// provider ever counted one: 4, what OpenAI's and Anthropic's tokenizers
/// give for English prose and code. Text that tokenizes denser is caught by
/// the first count (every later estimate is calibrated from it) or, before
/// that, by the server's overflow answer, which lowers the window.
pub(crate) const FALLBACK_BYTES_PER_TOKEN: u64 = 4;

/// The token estimate of a request body of `bytes`, calibrated from the
/// last request the provider counted (`totals.cal_bytes` bytes read as
/// `totals.cal_tokens` prompt tokens), with a sixteenth more for content
/// that tokenizes denser than that one did; before any count, one token
/// per [`FALLBACK_BYTES_PER_TOKEN`] bytes. A count that says a token is
/// more than 6 bytes or less than one is not believed that far: the ratio
/// is held between the two.
pub fn estimate(bytes: usize, totals: &Totals) -> u64 {
    let bytes = bytes as u64;
    let totals = &believed(totals);
    // The very request the server counted: its count, no margin.
    if bytes > 0 && bytes == totals.cal_bytes && totals.cal_tokens > 0 {
        return totals.cal_tokens;
    }
    if totals.cal_bytes == 0 || totals.cal_tokens == 0 {
        return bytes.div_ceil(FALLBACK_BYTES_PER_TOKEN);
    }
    let tokens = (u128::from(bytes) * u128::from(totals.cal_tokens))
        .div_ceil(u128::from(totals.cal_bytes))
        .clamp(u128::from(bytes.div_ceil(6)), u128::from(bytes));
    u64::try_from(tokens + tokens.div_ceil(16)).unwrap_or(u64::MAX)
}

/// How many bytes of request body `tokens` tokens hold, by the same
/// calibration as [`estimate`] (its inverse, rounded down, so a body of
/// that size is estimated at most `tokens`).
pub(crate) fn bytes_for(tokens: u64, totals: &Totals) -> usize {
    let totals = &believed(totals);
    let mut bytes = tokens.saturating_mul(FALLBACK_BYTES_PER_TOKEN);
    if totals.cal_bytes > 0 && totals.cal_tokens > 0 {
        let raw = u128::from(tokens) * 16 / 17 * u128::from(totals.cal_bytes)
            / u128::from(totals.cal_tokens);
        let held = raw.clamp(
            u128::from(tokens) * 16 / 17,
            u128::from(tokens) * 16 / 17 * 6,
        );
        bytes = u64::try_from(held).unwrap_or(u64::MAX);
    }
    // Walk down past rounding until the estimate agrees.
    let mut bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    while bytes > 0 && estimate(bytes, totals) > tokens {
        bytes -= bytes.div_ceil(64).max(1);
    }
    bytes
}

/// `totals` with its calibration dropped when the count behind it is not
/// [`crate::overflow::plausible`] (a server's absurd number, in a log of
/// any age), so estimates fall back to the assumed ratio.
fn believed(totals: &Totals) -> Totals {
    let mut totals = totals.clone();
    if !crate::overflow::plausible(totals.cal_bytes, totals.cal_tokens) {
        totals.cal_bytes = 0;
        totals.cal_tokens = 0;
    }
    totals
}

/// Whether a server's count of a request of `bytes`, estimated at
/// `tokens`, could change what happens to it under `window`: the estimate
/// has no count of a request at least three quarters that size behind it,
/// and it is within half again of the compaction point (the calibration
/// is held between 1 and 6 bytes a token around the 4 assumed, so a
/// count cannot rescue more).
pub(crate) fn count_helps(totals: &Totals, bytes: usize, tokens: u64, window: u64) -> bool {
    let totals = &believed(totals);
    let recent = totals.cal_tokens > 0 && totals.cal_bytes.saturating_mul(4) >= bytes as u64 * 3;
    !recent && window > 0 && tokens < point(window).saturating_mul(3) / 2
}

/// Whether a request estimated at `tokens` may go out under `window`: below
/// the compaction point, so the answer still has its [`room`].
pub fn fits(tokens: u64, window: u64) -> bool {
    window == 0 || tokens < point(window)
}

/// The answer's room for a request of `tokens` that does not leave the
/// full [`room`] beside it: what is left of the window, when that is at
/// least a quarter of the room (enough for the work of a turn); none when
/// the full room is left (or there is no window), or not even a quarter.
/// A 2,048-token window whose history gave way as far as it can still
/// answers in the 400 tokens it has left, rather than stopping.
pub fn shrunk_room(tokens: u64, window: u64) -> Option<u64> {
    if fits(tokens, window) {
        return None;
    }
    let left = window.saturating_sub(tokens);
    (left >= room(window) / 4).then_some(left)
}

/// Whether a request of `tokens` may go out: with the full room beside it,
/// or with a [`shrunk_room`].
pub fn answerable(tokens: u64, window: u64) -> bool {
    fits(tokens, window) || shrunk_room(tokens, window).is_some()
}

/// The characters a result keeps when the window makes it give way last
/// (head and tail, the whole of it in a spill file).
pub const SQUEEZE_HEAD: usize = 1_000;
/// The tail kept by [`squeeze`].
pub const SQUEEZE_TAIL: usize = 400;

/// The characters squeezing keeps of each result or answer, head and tail
/// together, tried in this order: the most that lets the request fit (a
/// small window squeezes harder; at 0 only the note is left).
pub(crate) const SQUEEZE_STEPS: [usize; 5] = [SQUEEZE_HEAD + SQUEEZE_TAIL, 700, 300, 100, 0];

/// Whether a result is long enough for [`squeeze`] to shorten it, keeping
/// `keep` characters.
pub fn squeezable(content: &str, keep: usize) -> bool {
    let limit = keep + SLACK;
    content.len() > limit && content.chars().nth(limit).is_some()
}

/// A result cut to `keep` characters of head and tail (five sevenths the
/// head, as [`SQUEEZE_HEAD`] to [`SQUEEZE_TAIL`]) to fit the window,
/// naming the file that holds the whole of it.
pub(crate) fn squeeze(content: &str, path: &str, keep: usize) -> String {
    let note = format!(
        " to fit the context window; the whole result is in {path}, read it with read_file and an offset"
    );
    let head = keep * SQUEEZE_HEAD / (SQUEEZE_HEAD + SQUEEZE_TAIL);
    tools::cut(content, head, keep - head, &note)
}

/// Whether an answer of the model holds text or call arguments long enough
/// for [`squeeze_answer`] to shorten.
pub(crate) fn answer_squeezable(m: &Message, keep: usize) -> bool {
    m.role == Role::Assistant
        && (squeezable(&m.content, keep)
            || m.tool_calls.iter().any(|c| squeezable(&c.arguments, keep)))
}

/// What a squeezed answer's spill file holds: its text, then each call's
/// arguments, a line before each saying which.
pub(crate) fn answer_whole(m: &Message) -> String {
    let mut whole = m.content.clone();
    for c in &m.tool_calls {
        whole.push_str(&format!(
            "\n[tool call {} {}]\n{}",
            c.id, c.name, c.arguments
        ));
    }
    whole
}

/// An answer of the model cut to fit the window, the last thing that gives
/// way: its text and each long call argument to head and tail, naming the
/// file that holds the whole answer. The call keeps its id and name, so
/// its result still answers it; the arguments are then text, not JSON
/// (an Anthropic request sends such a call's input as `{}`).
pub(crate) fn squeeze_answer(m: &mut Message, path: &str, keep: usize) {
    if squeezable(&m.content, keep) {
        m.content = squeeze(&m.content, path, keep);
    }
    for c in &mut m.tool_calls {
        if squeezable(&c.arguments, keep) {
            c.arguments = squeeze(&c.arguments, path, keep);
        }
    }
}

/// A compaction or refinement that will send more model requests than this
/// says first how many, and about how many input tokens.
pub(crate) const COSTLY_REQUESTS: u64 = 4;

/// The line said before a compaction or refinement (`what`) that sends
/// `requests` model requests of about `input_tokens` in all, when that is
/// more than [`COSTLY_REQUESTS`].
pub(crate) fn cost_line(what: &str, requests: u64, input_tokens: u64) -> Option<String> {
    (requests > COSTLY_REQUESTS).then(|| {
        format!(
            "{what}: this sends about {requests} model requests, about {} input tokens in all",
            tokens_k(input_tokens)
        )
    })
}

/// A token count as a user reads it: `900`, `41k`, `5.1M`.
pub(crate) fn tokens_k(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// About how many summary requests a part of `text_tokens` in `messages`
/// messages takes, and their input tokens in all, when each request
/// carries `fixed` tokens besides its piece (system prompt, prompt) and
/// the notes so far under `window`: at most one a message (a message too
/// large for a piece is cut for it).
pub(crate) fn summary_cost(text_tokens: u64, messages: u64, fixed: u64, window: u64) -> (u64, u64) {
    let notes = room(window) / 2;
    let piece = point(window).saturating_sub(fixed + notes).max(1);
    let requests = text_tokens.div_ceil(piece).clamp(1, messages.max(1));
    let per_request = (text_tokens / requests).min(piece);
    (requests, requests * (fixed + notes / 2 + per_request))
}

/// The instruction that closes a summary request.
pub const SUMMARY_PROMPT: &str = "\
The conversation above is about to be compacted: everything before the last few turns will be \
replaced by your notes, and the work continues from them. Write those working notes now.

Keep verbatim, exactly as they appear: every name, file path, command, URL, identifier, number, \
version, date, port, key fingerprint, error message and value the user gave or a tool returned. \
Then the decisions made and why, what was done and verified, and the open tasks and next steps.

Write plain text in short sections (Facts, Decisions, Done, Open). Do not call tools. \
Do not address the user; these notes are for you.";

/// What the last user message of a summary request says: the
/// [`SUMMARY_PROMPT`], and for a piece after the first the notes so far,
/// to be carried on.
pub(crate) fn piece_prompt(notes: Option<&str>) -> String {
    match notes {
        None => SUMMARY_PROMPT.to_owned(),
        Some(notes) => format!(
            "{SUMMARY_PROMPT}\n\nThe conversation above continues an earlier part you already wrote \
             notes on; here they are. Write one set of notes covering both: keep everything in them \
             that still holds, verbatim, and add what the conversation above adds.\n\n\
             [Your notes so far]\n{notes}"
        ),
    }
}

/// Where the next piece of a summary in pieces ends: the furthest turn
/// start in `from+1..=cut` (or `cut` itself) whose request `fits`, else the
/// furthest message start that parts no call from its result; `None` when
/// not even the first such step fits. `fits(end)` is asked O(log n) times.
pub(crate) fn piece_end(
    messages: &[Message],
    from: usize,
    cut: usize,
    fits: impl Fn(usize) -> bool,
) -> Option<usize> {
    let cut = cut.min(messages.len());
    let furthest = |ends: &[usize]| -> Option<usize> {
        // Sizes grow with the end: the last end that fits, by bisection.
        let (mut lo, mut hi) = (0, ends.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if fits(ends[mid]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1).map(|i| ends[i])
    };
    let boundary =
        |i: usize| i == cut || (messages[i].role == Role::User && !is_notes(&messages[i]));
    let turns: Vec<usize> = (from + 1..=cut).filter(|&i| boundary(i)).collect();
    if let Some(end) = furthest(&turns) {
        return Some(end);
    }
    // A turn too big for one request: end before an answer or a message of
    // the user, never between a call and its result.
    let steps: Vec<usize> = (from + 1..=cut)
        .filter(|&i| i == cut || messages[i].role != Role::Tool)
        .collect();
    furthest(&steps)
}

/// What a message cut for a summary request says in its middle.
pub(crate) const CUT_FOR_SUMMARY: &str =
    " of this message for the summary (it is larger than the context window)";

/// The last user message of a summary request that carries the part to
/// summarize as one transcript (no tools offered): the transcript, then
/// [`piece_prompt`].
pub(crate) fn transcript_prompt(transcript: &str, notes: Option<&str>) -> String {
    format!(
        "<conversation>\n{transcript}</conversation>\n\n{}",
        piece_prompt(notes)
    )
}

/// The first place after `from` where a piece of a summary may end: the
/// next message that is not a tool result (so no call is parted from its
/// result), or `cut`.
pub(crate) fn first_step(messages: &[Message], from: usize, cut: usize) -> usize {
    let cut = cut.min(messages.len());
    (from + 1..cut)
        .find(|&i| messages[i].role != Role::Tool)
        .unwrap_or(cut)
}

/// Where the latest round of the turn in flight starts (its answer that
/// calls tools), when the turn has an earlier round to summarize before
/// it: the cut of the last step of giving way.
pub(crate) fn latest_round(messages: &[Message]) -> Option<usize> {
    let start = turn_start_from_end(messages, 1);
    let round = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .map(|(i, _)| i)?;
    (round > start + 1).then_some(round)
}

/// How the notes of a compaction begin, at the head of the history.
const NOTES_PREFIX: &str =
    "[Working notes: the earlier part of this session was compacted into these notes; \
                            the turns after them are verbatim.]";

/// How the notes appear at the head of the compacted history.
pub fn notes_message(notes: &str) -> String {
    format!("{NOTES_PREFIX}\n\n{notes}")
}

/// Whether a message is the notes of an earlier compaction (no turn of
/// its own).
pub(crate) fn is_notes(m: &Message) -> bool {
    m.role == Role::User && m.content.starts_with(NOTES_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn history(spec: &str) -> Vec<Message> {
        let at = datetime!(2026-12-02 10:00 UTC);
        spec.chars()
            .map(|c| match c {
                'u' => Message::user(at, "u"),
                'a' => Message::assistant(at, "a"),
                't' => Message::tool(at, "c", "t"),
                'T' => Message::tool(at, "c", "x".repeat(20_000)),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn cuts_three_turns_from_the_end() {
        assert_eq!(Plan::of(&history("uaua"), 100).cut, 0);
        assert_eq!(Plan::of(&history("uauaua"), 100).cut, 0);
        assert_eq!(Plan::of(&history("uauauaua"), 100).cut, 2);
        assert_eq!(Plan::of(&history("auatuaua"), 100).cut, 1);
        let h = history("uaTauaTuaua");
        let plan = Plan::of(&h, 10_000);
        assert_eq!(plan.cut, 4);
        assert_eq!(plan.prune, [2], "only the big result before the cut");
        assert_eq!(turns(&h), [0..4, 4..7, 7..9, 9..11]);
    }

    #[test]
    fn pruning_is_idempotent_and_keeps_both_ends() {
        let text: String = (0..30_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let once = prune(&text);
        assert!(
            once.starts_with(&text[..HEAD_CHARS])
                && once.ends_with(&text[text.len() - TAIL_CHARS..])
        );
        assert!(once.contains("[… 24880 characters cut by compaction"));
        assert!(!prunable(&once, 100));
        assert_eq!(
            Plan::of(
                &[Message::tool(datetime!(2026-12-02 10:00 UTC), "c", once)],
                0
            )
            .prune
            .len(),
            0
        );
    }

    #[test]
    fn pieces_end_at_turn_starts_that_fit() {
        let h = history("uatuatuauau");
        // Any end fits: the whole part.
        assert_eq!(piece_end(&h, 0, 9, |_| true), Some(9));
        // Up to six messages fit: the furthest turn start within them.
        assert_eq!(piece_end(&h, 0, 9, |end| end <= 6), Some(6));
        assert_eq!(piece_end(&h, 6, 9, |end| end <= 8), Some(8));
        // A turn too big: before its second answer, never inside a round.
        assert_eq!(piece_end(&h, 0, 9, |end| end <= 2), Some(1));
        assert_eq!(piece_end(&h, 0, 9, |_| false), None);
    }

    #[test]
    fn bytes_for_is_the_estimates_inverse() {
        let cal = |b, t| Totals {
            cal_bytes: b,
            cal_tokens: t,
            ..Totals::default()
        };
        for totals in [
            Totals::default(),
            cal(4000, 1000),
            cal(1000, 900),
            cal(10, 1000),
        ] {
            for tokens in [0u64, 1, 100, 21_600, 115_200] {
                let bytes = bytes_for(tokens, &totals);
                assert!(estimate(bytes, &totals) <= tokens, "{tokens} {totals:?}");
                assert!(
                    tokens < 100 || estimate(bytes + bytes / 8 + 16, &totals) > tokens,
                    "{tokens}: {bytes} bytes is far under"
                );
            }
        }
    }

    #[test]
    fn a_small_prune_limit_is_honoured() {
        let text = "0123456789".repeat(300);
        // 3,000 characters under a limit of 1,000: cut to at most that.
        assert!(prunable(&text, 1_000));
        let cut = prune_to(&text, 1_000);
        assert!(cut.chars().count() <= 1_000, "{}", cut.len());
        assert!(cut.starts_with("0123") && cut.contains("characters cut by compaction"));
        // Never again, at any limit.
        for limit in [0, 10, 100, 1_000, 16_000] {
            assert!(!prunable(&cut, limit), "{limit}");
        }
        // At the default, exactly the old cut.
        let long = "x".repeat(30_000);
        assert_eq!(prune_to(&long, PRUNE_CHARS), prune(&long));
        // A tiny limit keeps only the note.
        let note = prune_to(&text, 50);
        assert!(note.trim().starts_with("[… 3000 characters cut"), "{note}");
        assert!(!prunable(&note, 50));
    }

    #[test]
    fn a_costly_compaction_is_said_first() {
        assert_eq!(cost_line("compaction", 4, 1_000), None);
        let line = cost_line("compaction", 5, 50_000).unwrap();
        assert!(line.contains("about 5 model requests"), "{line}");
        // A window's worth at 4k: a few pieces; ten windows: many more.
        let (one, _) = summary_cost(3_000, 100, 1_500, 4_096);
        let (ten, tokens) = summary_cost(30_000, 100, 1_500, 4_096);
        assert!(one <= 6 && ten > one * 5, "{one} {ten}");
        assert!(tokens > 30_000);
        // Never more than a request a message.
        assert_eq!(summary_cost(1_000_000, 3, 3_500, 4_096).0, 3);
    }

    #[test]
    fn trigger_and_status_points() {
        assert_eq!(room(128_000), 12_800);
        assert_eq!(room(8_000), 2_000);
        assert_eq!(room(20_480), 2_048);
        assert_eq!(room(4_096), 1_024);
        assert_eq!(room(1_000_000), 32_000);
        assert!(!due(115_199, 128_000));
        assert!(due(115_200, 128_000));
        assert!(!near(92_000, 128_000));
        assert!(near(92_160, 128_000));
        assert!(!due(5, 0));
    }
}
