//! Which model and window a run asks with: what a resumed session keeps of
//! its own, what a replay takes from its log, and when the server is asked
//! for its window at start. The shell reads the log and asks the server;
//! these functions decide.

use super::{ollama_window, Preset, Setting, Source, WindowProbe};

/// What a session takes of the model and window settled for this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Takes {
    /// The model settled for this run (else the session's own).
    pub model: bool,
    /// The window settled for this run (else the session's own).
    pub window: bool,
}

impl Takes {
    /// A new session takes both. A resumed one keeps its own model and
    /// window unless the user asked for others for this run (a flag or a
    /// variable, [`Source::overrides_resumed`]); a model asked for brings
    /// its window from the table.
    pub fn of(model: Source, window: Source, resuming: bool) -> Takes {
        let chosen = |source: Source| !resuming || source.overrides_resumed();
        Takes {
            model: chosen(model),
            window: chosen(window) || (window == Source::Table && model.overrides_resumed()),
        }
    }

    /// Where the window the session runs with came from, as `/status`
    /// says it: its log when it keeps its own, the model table, or the
    /// source of the window settled (`flag`, `server`, …).
    pub fn window_origin(self, window: Source) -> &'static str {
        match window {
            _ if !self.window => "the session's log",
            Source::Table => "the model table",
            source => source.as_str(),
        }
    }
}

/// `--provider replay:NAME`: the model and window a replay asks with, so
/// that its requests are the recorded ones: those the recorded session
/// began with (`recorded`, its header's; a window of 0 is not recorded),
/// unless the user asked for others for this run. The sources stay the
/// settled ones.
pub fn replayed(
    model: &Setting<String>,
    window: &Setting<u64>,
    recorded: (&str, u64),
) -> (String, u64) {
    let (recorded_model, recorded_window) = recorded;
    let model = if model.source.overrides_resumed() {
        model.value.clone()
    } else {
        recorded_model.to_owned()
    };
    let window = if !window.source.overrides_resumed() && recorded_window > 0 {
        recorded_window
    } else {
        window.value
    };
    (model, window)
}

/// What a run asks its model server about the window at start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowAsk {
    /// The context Ollama runs the model at. Ollama cuts an overlong
    /// prompt silently, so it is asked even when a window was `given`
    /// (which a smaller context then replaces).
    Ollama {
        /// The window the user gave (a flag, a variable, the config
        /// file), if any.
        given: Option<u64>,
    },
    /// The server's window, by this probe: nobody gave one.
    Server(WindowProbe),
}

/// Whether and what a run asks its server about the window: nothing for a
/// replay or a resumed session (which keep the recorded window), nor of a
/// server that cannot say (`preset`'s [`Preset::window_probe`]); Ollama
/// always; another server when nobody gave a window (the table's window is
/// a default still: the server knows better).
pub fn window_ask(
    preset: Preset,
    window: &Setting<u64>,
    replaying: bool,
    resuming: bool,
) -> Option<WindowAsk> {
    if replaying || resuming {
        return None;
    }
    let probe = preset.window_probe()?;
    let given = (!matches!(window.source, Source::Default | Source::Table)).then_some(window.value);
    match (probe, given) {
        (WindowProbe::OllamaShow, given) => Some(WindowAsk::Ollama { given }),
        (probe, None) => Some(WindowAsk::Server(probe)),
        (_, Some(_)) => None,
    }
}

/// The window a run takes from the server's `answer` to `ask` (`None`: no
/// answer), with where it came from and, when Ollama's context is below
/// the window given, the line that says so. `None` keeps the window as it
/// settled. An Ollama that says nothing leaves its default context, a
/// default still ([`ollama_window`]).
pub fn window_learned(
    ask: WindowAsk,
    answer: Option<u64>,
    model: &str,
) -> Option<(Setting<u64>, Option<String>)> {
    match ask {
        WindowAsk::Server(_) => Some((
            Setting {
                value: answer?,
                source: Source::Server,
            },
            None,
        )),
        WindowAsk::Ollama { given } => {
            let window = ollama_window(given, answer)?;
            let source = if answer.is_some() {
                Source::Server
            } else {
                Source::Default
            };
            let note = given.map(|given| {
                format!(
                    "window: Ollama runs {model} with a {window}-token context, below the {given} \
                     given, and cuts a longer prompt silently: the window is {window} (raise \
                     num_ctx in the model's Modelfile, or OLLAMA_CONTEXT_LENGTH on the server)"
                )
            });
            Some((
                Setting {
                    value: window,
                    source,
                },
                note,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OLLAMA_DEFAULT_CONTEXT;

    const SOURCES: [Source; 6] = [
        Source::Flag,
        Source::Env,
        Source::Config,
        Source::Server,
        Source::Table,
        Source::Default,
    ];

    fn setting<T>(value: T, source: Source) -> Setting<T> {
        Setting { value, source }
    }

    #[test]
    fn a_new_session_takes_what_settled_a_resumed_one_what_was_asked_for() {
        for model in SOURCES {
            for window in SOURCES {
                let new = Takes::of(model, window, false);
                assert_eq!(
                    new,
                    Takes {
                        model: true,
                        window: true
                    }
                );
                let resumed = Takes::of(model, window, true);
                let asked = |s: Source| matches!(s, Source::Flag | Source::Env);
                assert_eq!(resumed.model, asked(model), "{model:?} {window:?}");
                // A model asked for brings the table's window with it.
                assert_eq!(
                    resumed.window,
                    asked(window) || (window == Source::Table && asked(model)),
                    "{model:?} {window:?}"
                );
            }
        }
    }

    #[test]
    fn status_names_where_the_window_came_from() {
        let origin =
            |model, window, resuming| Takes::of(model, window, resuming).window_origin(window);
        assert_eq!(
            origin(Source::Config, Source::Table, false),
            "the model table"
        );
        assert_eq!(origin(Source::Flag, Source::Table, true), "the model table");
        assert_eq!(
            origin(Source::Config, Source::Table, true),
            "the session's log"
        );
        assert_eq!(
            origin(Source::Flag, Source::Config, true),
            "the session's log"
        );
        assert_eq!(origin(Source::Default, Source::Flag, true), "flag");
        assert_eq!(origin(Source::Default, Source::Server, false), "server");
        assert_eq!(origin(Source::Default, Source::Default, false), "default");
    }

    #[test]
    fn a_replay_asks_the_recorded_model_at_its_window_unless_asked_otherwise() {
        let recorded = ("qwen3", 32_768);
        let configured = setting("gpt-5".to_owned(), Source::Config);
        let table = setting(400_000, Source::Table);
        assert_eq!(
            replayed(&configured, &table, recorded),
            ("qwen3".to_owned(), 32_768)
        );
        let flag = setting("llama".to_owned(), Source::Flag);
        // A model asked for keeps the recorded window: only a window asked
        // for replaces it.
        assert_eq!(
            replayed(&flag, &table, recorded),
            ("llama".to_owned(), 32_768)
        );
        assert_eq!(
            replayed(&flag, &setting(8_192, Source::Env), recorded),
            ("llama".to_owned(), 8_192)
        );
        // A header without a window keeps the settled one.
        assert_eq!(
            replayed(&configured, &table, ("qwen3", 0)),
            ("qwen3".to_owned(), 400_000)
        );
    }

    #[test]
    fn the_server_is_asked_only_at_a_new_sessions_start_and_ollama_always() {
        let default = setting(128_000, Source::Default);
        let given = setting(32_768, Source::Flag);
        assert_eq!(
            window_ask(Preset::Llamacpp, &default, false, false),
            Some(WindowAsk::Server(WindowProbe::LlamacppProps))
        );
        // The table's window is a default still.
        assert_eq!(
            window_ask(
                Preset::Openrouter,
                &setting(200_000, Source::Table),
                false,
                false
            ),
            Some(WindowAsk::Server(WindowProbe::ModelList))
        );
        assert_eq!(window_ask(Preset::Llamacpp, &given, false, false), None);
        assert_eq!(
            window_ask(Preset::Ollama, &given, false, false),
            Some(WindowAsk::Ollama {
                given: Some(32_768)
            })
        );
        assert_eq!(
            window_ask(Preset::Ollama, &default, false, false),
            Some(WindowAsk::Ollama { given: None })
        );
        for (replaying, resuming) in [(true, false), (false, true)] {
            assert_eq!(
                window_ask(Preset::Ollama, &default, replaying, resuming),
                None
            );
        }
        for preset in [
            Preset::Openai,
            Preset::Anthropic,
            Preset::Gemini,
            Preset::Scripted,
        ] {
            assert_eq!(
                window_ask(preset, &default, false, false),
                None,
                "{preset:?}"
            );
        }
    }

    #[test]
    fn what_the_server_says_becomes_the_window_and_a_smaller_ollama_context_is_said() {
        let server = WindowAsk::Server(WindowProbe::LlamacppProps);
        assert_eq!(
            window_learned(server, Some(4_096), "m"),
            Some((setting(4_096, Source::Server), None))
        );
        assert_eq!(window_learned(server, None, "m"), None);

        let unsaid = WindowAsk::Ollama { given: None };
        assert_eq!(
            window_learned(unsaid, None, "m"),
            Some((setting(OLLAMA_DEFAULT_CONTEXT, Source::Default), None))
        );
        assert_eq!(
            window_learned(unsaid, Some(8_192), "m"),
            Some((setting(8_192, Source::Server), None))
        );

        let given = WindowAsk::Ollama {
            given: Some(32_768),
        };
        assert_eq!(window_learned(given, Some(65_536), "m"), None);
        assert_eq!(window_learned(given, None, "m"), None);
        let (window, note) = window_learned(given, Some(8_192), "qwen3").unwrap();
        assert_eq!(window, setting(8_192, Source::Server));
        assert_eq!(
            note.as_deref(),
            Some(
                "window: Ollama runs qwen3 with a 8192-token context, below the 32768 given, and \
                 cuts a longer prompt silently: the window is 8192 (raise num_ctx in the model's \
                 Modelfile, or OLLAMA_CONTEXT_LENGTH on the server)"
            )
        );
    }
}
