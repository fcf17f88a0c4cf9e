//! Every bound and limit the shell enforces, decided here once: the tools'
//! output bounds and time budgets, the model requests' timeouts and size
//! limits, and the defaults of the run. The shell (`revolve-io`, the `repl`)
//! reads them from here and defines none of its own; `.ci/run` checks that
//! no numeric constant outside `core/` is left unmarked.
//!
//! The settings a user may change (`--window`, `--spill-result-chars`,
//! `--max-tool-rounds`, …) keep their defaults beside their rules:
//! [`crate::config`], [`crate::compact`], [`crate::session::SPILL_CHARS`],
//! [`crate::guard`], [`crate::retry`].

use std::time::Duration;

// ---------------------------------------------------------------------------
// read_file, list_dir

/// The most `read_file` returns in one call.
pub const READ_CAP: usize = 256 * 1024;

/// How much of a file's start is checked for NUL bytes.
pub const BINARY_PROBE: usize = 8 * 1024;

/// The most entries `list_dir` shows.
pub const LIST_CAP: usize = 2000;

// ---------------------------------------------------------------------------
// grep

/// The most matching lines `grep` shows.
pub const GREP_LINES: usize = 500;

/// The most bytes of matching lines `grep` shows.
pub const GREP_BYTES: usize = 64 * 1024;

/// Larger files are not searched.
pub const GREP_FILE_MAX: u64 = 4 * 1024 * 1024;

/// Characters of a matching line shown.
pub const GREP_LINE_CHARS: usize = 512;

/// How long one search may take.
pub const GREP_TIME: Duration = Duration::from_secs(30);

/// Directories not descended into (besides hidden ones).
pub const GREP_SKIP: [&str; 3] = [".git", "target", "node_modules"];

/// The longest pattern accepted, in characters.
pub const PATTERN_MAX: usize = 4096;

/// The most memory a compiled pattern may take.
pub const PATTERN_SIZE_MAX: usize = 10 << 20;

// ---------------------------------------------------------------------------
// running sessions

/// A session's lock file found held is tried again this many times before
/// the session counts as running elsewhere (a listing holds each lock for
/// a moment).
pub const CLAIM_TRIES: u32 = 20;

/// How long to wait between those tries (all of them: about 100 ms).
pub const CLAIM_RETRY: Duration = Duration::from_millis(5);

// ---------------------------------------------------------------------------
// shell

/// Seconds a command may run when the model does not say.
pub const SHELL_TIMEOUT_S: u64 = 120;

/// The most seconds a command may run.
pub const SHELL_MAX_TIMEOUT_S: u64 = 3600;

/// An API key shorter than this is not looked for in tool output (a
/// short value would blot out ordinary text).
pub const REDACTED_KEY_MIN: usize = 8;

/// The most bytes kept of one stream; past it the command is killed.
pub const SHELL_STREAM_CAP: usize = 64 * 1024 * 1024;

/// How long to wait for the pipes to close once `sh` has ended.
pub const SHELL_DRAIN: Duration = Duration::from_secs(1);

/// The most bytes of untracked files kept in memory before a command.
pub const KEEP_CAP: usize = 64 * 1024 * 1024;

// ---------------------------------------------------------------------------
// edit_file, write_file

/// The largest file an edit opens (a bigger one is refused).
pub const EDIT_CAP: u64 = 256 * 1024 * 1024;

// ---------------------------------------------------------------------------
// revolve's own files

/// The largest config, goal or memory file read (a bigger one is an error
/// naming it): they are a few kilobytes, and a name linked to a device must
/// not be read without end.
pub const OWN_FILE_CAP: u64 = 16 * 1024 * 1024;

/// The most read of a file revolve reads because it sits in the
/// repository (project instructions, a skill's `SKILL.md`, memory in a
/// `.task-agent/` workspace, a `.git` file): past it the rest is left
/// out. A cloned repository chooses these files, so they are bounded
/// whatever they are.
pub const REPO_FILE_CAP: u64 = 256 * 1024;

/// The largest session index or journal read: they grow with the number
/// of sessions (about 300 bytes each), so this bounds reading, not users.
pub const INDEX_CAP: u64 = 1024 * 1024 * 1024;

/// How many named sessions `revolve sessions` shows, the most recently
/// active first (with the latest session and the subagents of those
/// shown); the rest are counted in a closing line, and `--all` lists
/// every one. A listing this long is read from the index's head alone,
/// whatever the number of sessions.
pub const SESSIONS_SHOWN: usize = 50;

// ---------------------------------------------------------------------------
// Model requests

/// How long connecting (and resolving the host) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The default longest silence between two reads of an answer.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a server on this machine (loopback: `localhost`, 127.0.0.0/8,
/// `::1`) may send no content before an answer's first: its response head
/// and the stream up to the first text, tool call or reasoning. llama.cpp,
/// Ollama and LM Studio on a CPU send nothing (or only a role chunk) while
/// they read the prompt, and that legitimately takes minutes: 1,702 tokens
/// at 22 tokens/s is 77 s, and at 4.8 tokens/s on a CPU shared with a build
/// it is 355 s, which the 120 s [`STALL_TIMEOUT`] took for a dead server.
/// After the first content [`STALL_TIMEOUT`] applies again; remote servers
/// never get this; an explicit `--stall-timeout` holds everywhere instead.
/// (Codex CLI waits 300 s for any stream.)
pub const LOCAL_PREFILL_WAIT: Duration = Duration::from_secs(600);

/// How long a question about the server's context (llama.cpp's `/props`,
/// Ollama's `/api/show` and `/api/ps`, a model list) may take at start.
pub const WINDOW_PROBE_WAIT: Duration = Duration::from_secs(2);

/// How long loading a model into Ollama may take when revolve loads it to
/// learn the context it runs at (the first request would wait as long).
pub const OLLAMA_LOAD_WAIT: Duration = Duration::from_secs(60);

/// How much of an error body is read, and how much of it is shown.
pub const ERROR_BODY_READ: u64 = 64 * 1024;
/// How much of an error body is shown, in characters.
pub const ERROR_BODY_SHOWN: usize = 200;

/// The most an answer may hold, text and tool calls together, in bytes: a
/// stream that goes past it fails (keeping the text so far), so a server
/// that never stops cannot take all the memory.
pub const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// The most bytes one streamed answer may send, events, comments and line
/// ends included (an answer of [`MAX_ANSWER_BYTES`] in small chunks
/// carries several times its text in JSON envelopes).
pub const MAX_STREAM_BYTES: usize = 16 * MAX_ANSWER_BYTES;

/// The largest non-streamed answer read (an answer of
/// [`MAX_ANSWER_BYTES`] with every character escaped, and its envelope).
pub const JSON_BODY_LIMIT: u64 = 2 * MAX_ANSWER_BYTES as u64 + 64 * 1024;

/// The most bytes read after a stream's end event (`[DONE]`,
/// `message_stop`) to reach the end of its body, so that the connection
/// goes back to the pool and the next request reuses it; a body with more
/// left than this is dropped and its connection closed.
pub const STREAM_DRAIN_BYTES: u64 = 64 * 1024;

/// How long a finished stream waits for the rest of its body before the
/// answer is returned anyway (the rest is then read on, in the
/// background, up to [`STREAM_DRAIN_BYTES`]).
pub const STREAM_DRAIN_WAIT: Duration = Duration::from_millis(500);

// ---------------------------------------------------------------------------
// Commands

/// How many skipped lines and inconsistencies `replay --check` lists one by
/// one; beyond that it counts them (a garbled file of any size is checked in
/// bounded memory).
pub const CHECK_LISTS: usize = 1_000;

/// The longest line of a server-sent event stream, and the most data of
/// one event, kept in bytes.
pub const SSE_MAX_LINE: usize = 16 * 1024 * 1024;

// ---------------------------------------------------------------------------
// What is shown

/// How much of the conversation a resume shows again, at most, in bytes.
pub const RESUME_SHOWS_BYTES: usize = 64 * 1024;

/// How much of the conversation `revolve attach` shows first, at most.
pub const ATTACH_SHOWS_BYTES: usize = 16 * 1024;

// ---------------------------------------------------------------------------
// Files revolve makes

/// The mode of a folder revolve creates under its state and config roots:
/// the owner's only, as ssh and gpg make theirs.
pub const DIR_MODE: u32 = 0o700;

/// The mode of a file revolve creates there.
pub const FILE_MODE: u32 = 0o600;

/// The mode of a new file `write_file` creates in the user's tree (an
/// existing file keeps its own), as an editor makes it under the usual
/// umask.
pub const NEW_FILE_MODE: u32 = 0o644;

// ---------------------------------------------------------------------------
// Runs

/// `--goal-run` stops after this many turns unless `--max-turns` says.
pub const GOAL_RUN_TURNS: u32 = 20;

// ---------------------------------------------------------------------------
// provider (issue 27): numbers a server or a model sends

/// The largest token count read from a server's `usage`: no window comes
/// near it, so a larger one is nonsense and is read as no count (core then
/// estimates).
pub const MAX_TOKEN_COUNT: u64 = 1 << 40;

/// The least context a server's overflow error may name and be believed
/// (see [`crate::overflow::lowered_window`]): no chat model serves fewer
/// tokens, so a smaller number is a misreading, and the window is lowered
/// below the size that failed instead.
pub const LEAST_NAMED_WINDOW: u64 = 512;

/// The bytes of request body one token of a server's count may stand for,
/// in tenths of a byte (1.5 to 12): a request body is JSON around prose,
/// code and schemas, which tokenizers read at 3 to 5 bytes a token (dense
/// scripts nearer 1.5, with the JSON around them). A count outside it (an
/// overflow error saying a 20 kB request is a billion tokens, or 3) is not
/// believed for calibrating estimates, live or on resume (see
/// [`crate::overflow::plausible`]).
pub const PLAUSIBLE_TENTHS_OF_BYTES_PER_TOKEN: (u64, u64) = (15, 120);

/// How many tool calls of one model answer run, by default
/// (`max_calls_per_answer`): the calls after these get an error result
/// the model sees, and are not run.
pub const MAX_CALLS_PER_ANSWER: u32 = 64;

/// What one tool call of an answer counts for towards
/// [`MAX_ANSWER_BYTES`] besides its own text: a server that streams
/// endless empty calls (a new `index` each) is stopped like one that
/// streams endless text.
pub const ANSWER_BYTES_PER_CALL: usize = 64;

/// How much of a server's `Retry-After` header a failure line shows, in
/// characters (seconds or an HTTP date fit; the header may be any length).
pub const RETRY_AFTER_SHOWN: usize = 40;

// ---------------------------------------------------------------------------
// terminal (issue 32): live progress

/// A wait shows its progress on a terminal once it took this long (a
/// running command's elapsed time and last lines): a quick one stays
/// silent.
pub const PROGRESS_AFTER_MS: u64 = 500;

/// How many of a running command's last output lines its live view shows.
pub const PROGRESS_LINES: usize = 3;

// MCP servers (issue 30)

/// How long one MCP tool call may take, in seconds, unless config
/// `mcp_timeout_s` says: then it gets an `error:` result and the session
/// goes on.
pub const MCP_TIMEOUT_S: u64 = 60;

/// How long a server may take to start (spawn or connect, `initialize`,
/// `tools/list`), in seconds, before it counts as failed.
pub const MCP_START_TIMEOUT_S: u64 = 30;

/// How long the first request waits for servers still starting, in
/// milliseconds: the servers start in parallel with the first prompt, and
/// one still starting after this joins a later request (a new tool list).
pub const MCP_START_WAIT_MS: u64 = 10_000;

/// After how long that wait says which servers it waits for, in
/// milliseconds (see [`crate::mcp::start_notice_ms`]).
pub const MCP_START_NOTICE_MS: u64 = 1_000;

/// The largest input schema of an MCP tool offered as it is, in bytes of
/// JSON: a larger one is offered as a bare `{"type":"object"}` and its
/// description says so, so one server cannot fill the window with schemas.
pub const MCP_SCHEMA_BYTES: usize = 8192;

/// The longest description of an MCP tool offered, in characters (cut
/// beyond, with `…`).
pub const MCP_DESCRIPTION_CHARS: usize = 1024;

/// The longest tool name offered (`mcp__SERVER__TOOL`), in characters: the
/// providers' limit (OpenAI's is 64).
pub const MCP_NAME_CHARS: usize = 64;

/// How many pages of `tools/list` are read from one server at most.
pub const MCP_LIST_PAGES: usize = 100;

/// The largest message revolve reads from an MCP server, in bytes (one
/// line on stdio, one response body over HTTP): past it revolve stops
/// keeping what the server sends, the call gets an `error:` result saying
/// so, and nothing larger is held in memory or spilled (issue 42: a 600 MB
/// result took 1.86 GB). 8 MiB holds any text a model could read.
pub const MCP_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// The most of a server's stderr kept, in bytes: its log holds the tail,
/// `NAME.stderr.log` and the one before it (`NAME.stderr.log.1`), each at
/// most this large, so a chatty or hostile server cannot fill the disk.
pub const MCP_STDERR_LOG_BYTES: u64 = 1024 * 1024;

/// How long before an MCP server's OAuth access token expires it is
/// refreshed instead of sent, in seconds (a request on its way must not
/// meet the expiry; Codex and Gemini CLI keep a minute too).
pub const MCP_TOKEN_REFRESH_S: u64 = 60;

/// How long `revolve mcp login` waits for the browser to come back to
/// its loopback listener, in seconds (a user reading a consent page).
pub const MCP_LOGIN_WAIT_S: u64 = 300;

/// The answer a request is expected to bring, in tokens, at least, when
/// `--max-cost` weighs it before it goes out (see
/// [`crate::models::expected_cost`]).
pub const EXPECTED_ANSWER_TOKENS: u64 = 1_024;

// ---------------------------------------------------------------------------
// reasoning effort

/// Anthropic's extended-thinking budget of each `--effort` level, in tokens
/// (low, medium, high; see [`crate::models::Effort::thinking_budget`]):
/// `budget_tokens` for the models that think on a budget, and what
/// `max_tokens` is raised by for every model that thinks (adaptive ones
/// included; see [`crate::request::Think`]). The API takes a budget of at
/// least 1,024 and wants it below `max_tokens`, which the request raises
/// by it (see [`crate::request::Shape::thinking`]); Anthropic's guidance is to start
/// at the minimum and go up, 16k and more for hard work. With the largest
/// answer room (32,000, [`crate::compact::room`]) the high level asks
/// `max_tokens` 56,576, inside the 64,000 the oldest Claude models of the
/// table ([`crate::models`]) may write.
pub const THINKING_BUDGETS: [u64; 3] = [2_048, 8_192, 24_576];

/// How often the content store is pruned of blobs no session file names
/// (at a start, at most once in this many seconds), and how old a blob
/// must be to go: one written since (by a session whose record of it is
/// not in its log yet) stays.
pub const BLOB_PRUNE_EVERY_S: u64 = 86_400;

/// How many background shell commands (`shell` with `background: true`) a
/// session may have running at once; one more is refused with a note to
/// kill one.
pub const BACKGROUND_SHELLS: usize = 8;

/// How much of a background command's unread output (stdout and stderr
/// as they came) `shell_output` returns; past it, the whole of it is in a
/// file whose path the result names, and the result is its head and tail.
pub const BACKGROUND_READ_BYTES: usize = 16 * 1024;

/// How much of a background command's output is kept in memory, unread;
/// past it the oldest unread bytes go (the file keeps everything up to
/// [`BACKGROUND_FILE_CAP`]).
pub const BACKGROUND_BUFFER_BYTES: usize = 256 * 1024;

/// How much of a background command's output its file keeps; past it,
/// writing stops and the next read says so.
pub const BACKGROUND_FILE_CAP: u64 = 64 * 1024 * 1024;

/// How many `task` calls of one answer run at once (the others wait for a
/// free place).
pub const PARALLEL_TASKS: usize = 4;
// ---------------------------------------------------------------------------
// hooks (issue 43)

/// How long a hook command may run, in seconds, when its `timeout` does
/// not say (Claude Code's default): then it is killed with its process
/// group, said once, and the session goes on as if it had not run.
pub const HOOK_TIMEOUT_S: u64 = 60;

/// The longest `timeout` a hook may ask, in seconds.
pub const HOOK_MAX_TIMEOUT_S: u64 = 600;

/// The most a hook's stdout or stderr is read, in bytes: past it the hook
/// is killed, said once, and what came is all there is (a hook printing
/// 100 MB costs no more than this).
pub const HOOK_OUTPUT_BYTES: usize = 64 * 1024;

/// The most text one hook adds for the model (`additionalContext`, a
/// block's reason, plain output of a `SessionStart` or
/// `UserPromptSubmit` hook), in characters (Claude Code's bound): cut
/// beyond, with a line saying so.
pub const HOOK_CONTEXT_CHARS: usize = 10_000;

/// How many times `Stop` hooks may send one turn on (a `block` decision
/// with a reason) before the turn ends anyway, said once: a hook that
/// always blocks cannot loop a session.
pub const STOP_HOOK_ROUNDS: u32 = 2;

// ---------------------------------------------------------------------------
// web_fetch (issue 44)

/// The most bytes of a page `web_fetch` reads; the rest is not read, and
/// the result says the page was cut there.
pub const WEB_FETCH_BYTES: u64 = 10 * 1024 * 1024;

/// How long a fetch may take in all (connecting, every redirect, the
/// body), before it is given up.
pub const WEB_FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// How many redirects a fetch follows before it stops.
pub const WEB_FETCH_REDIRECTS: u32 = 5;

/// How long a fetched page is served from the session's cache instead of
/// the network: the same URL asked again within this many seconds.
pub const WEB_FETCH_CACHE_S: u64 = 15 * 60;

// ---------------------------------------------------------------------------
// images (issue 44 item 1): what a picture may be when it is sent

/// The longest edge, in pixels, of an image sent on the Messages wire:
/// Anthropic's recommended size (docs.anthropic.com, "Vision": an image
/// whose long edge is over 1568 px is scaled down by the server anyway,
/// costing time and nothing gained; the hard limit is 8000 px).
pub const IMAGE_EDGE_ANTHROPIC: u32 = 1568;

/// The most bytes of one image on the Messages wire, before base64:
/// Anthropic refuses an image over 5 MB; its base64 text is a third
/// larger, so the raw bytes are held to three quarters of that.
pub const IMAGE_BYTES_ANTHROPIC: usize = 5 * 1024 * 1024 * 3 / 4;

/// The longest edge, in pixels, of an image sent on the Chat Completions
/// wire: OpenAI fits a `detail: high` image into 2048 × 2048 first
/// (platform.openai.com, "Images and vision"), so nothing larger is read.
pub const IMAGE_EDGE_OPENAI: u32 = 2048;

/// The most bytes of one image on the Chat Completions wire: OpenAI's
/// 20 MB per image.
pub const IMAGE_BYTES_OPENAI: usize = 20 * 1024 * 1024;

/// The longest edge, in pixels, of an image sent to Gemini (issue 45):
/// the API fits larger pictures into 3072 × 3072 before it reads them
/// (ai.google.dev, "Image understanding"), so nothing larger is sent.
pub const IMAGE_EDGE_GEMINI: u32 = 3072;

/// The most bytes of one image sent to Gemini, before base64: inline data
/// may be 7 MB a file (Vertex AI's model pages, "Maximum file size per
/// file for inline data"); its base64 text is a third larger, so the raw
/// bytes are held to three quarters of that.
pub const IMAGE_BYTES_GEMINI: usize = 7 * 1024 * 1024 * 3 / 4;

/// The most pixels an image may have to be decoded at all (about 16k ×
/// 16k): past it, the file is refused unread rather than held in memory
/// (a 6000 × 6000 picture is 36 million).
pub const IMAGE_DECODE_PIXELS: u64 = 256 * 1024 * 1024;

/// What one image weighs in a request's size estimate, in bytes of body
/// (four to a token): about 1600 tokens, Anthropic's count for a picture
/// at the 1568 px edge ((w × h) / 750), and within OpenAI's 85 + 170 per
/// 512 px tile for a high-detail one. Its base64, far longer, is not
/// counted: models read pictures as tiles, not as text.
pub const IMAGE_WEIGHT_BYTES: usize = 1600 * 4;

/// How many times an image still over the byte limit after scaling to the
/// edge is scaled again (each time to three quarters of its edge) before
/// it is left out.
pub const IMAGE_SHRINK_TRIES: u32 = 8;

/// The most searches one Anthropic answer may make with the web search
/// tool (`max_uses` of `web_search_20250305`, issue 44): each costs money
/// ($10 per 1,000 at Anthropic's prices), and five answer most questions.
pub const WEB_SEARCH_MAX_USES: u32 = 5;
