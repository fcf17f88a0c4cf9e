//! The session's side of file edits and rewinds (see [`crate::edit`] for
//! the steps and the rules).

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::{Command, Input, Phase, Session};
use super::{FileCommand, FileInput, UserCommand};
use crate::edit::{self, Answer, Keys, Scope, View};
use crate::record::{Approved, Asked, Edit, EditBy, Record, Seen, ToolCall, Written};
use crate::rules::Verdict;
use crate::tools::{self, Tool};

/// A file opened for an edit, as the shell found it: facts only; what
/// they allow is decided here ([`Session::decide`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Opened {
    /// Canonical and absolute.
    pub path: String,
    /// As the model named it, for messages and the diff.
    pub shown: String,
    /// The content now; `None` when there is no such file (yet).
    pub content: Option<Vec<u8>>,
    /// The hash of `content`.
    pub hash: Option<String>,
    /// The file's permission bits, kept when it is written.
    pub mode: Option<u32>,
    /// Whether the path is outside the working tree (reached through a
    /// read grant): written only when the user, at a terminal, says yes
    /// to a question naming it as outside.
    pub outside: bool,
    /// Whether the path is in revolve's own state folder (session logs,
    /// spilled output, the content store): never written by a tool.
    pub own: bool,
    /// Whether the path is in the working tree's `.git` (its config,
    /// hooks): never written by a tool, as revolve's own `git` and the
    /// user's would run what is planted there.
    pub git: bool,
    /// How many names (hard links) the file has; 0 or 1 for one.
    pub links: u64,
}

/// An edit between its stage and its write.
#[derive(Clone, Debug)]
pub(super) struct Staged {
    id: String,
    tool: &'static str,
    path: String,
    shown: String,
    before: Option<String>,
    content: Vec<u8>,
    mode: Option<u32>,
    diff: edit::Diff,
    asked: bool,
    /// The permission rule that allowed it without asking.
    rule: Option<String>,
    /// Outside the working tree (asked as such, never "always").
    outside: bool,
    /// The file's hard links when opened (more than one: the edit splits
    /// them, and says so).
    links: u64,
}

impl Session {
    /// An answer about the edit in flight ([`FileInput::Opened`],
    /// [`FileInput::Staged`], [`FileInput::Wrote`]): the edit `call`, as its
    /// `PreToolUse` hooks left it; `staged` is the edit once staged.
    pub(super) fn edit_input(
        &mut self,
        call: ToolCall,
        staged: Option<Staged>,
        input: FileInput,
    ) -> Vec<Command> {
        match (input, staged) {
            (
                FileInput::Opened {
                    id,
                    opened,
                    keys,
                    now,
                },
                None,
            ) => self.opened(call, id, opened, &keys, now),
            (
                FileInput::Staged {
                    id: _,
                    answer,
                    after,
                    error,
                    now,
                },
                Some(staged),
            ) => self.staged(call, staged, answer, after, error, now),
            (FileInput::Wrote { id: _, error, now }, Some(staged)) => {
                self.wrote(call, staged, error, now)
            }
            (input, staged) => {
                self.phase = Phase::Editing { call, staged };
                self.ignored(&Input::File(input)).0
            }
        }
    }

    /// `read_file` read a file: logged, so an edit may follow.
    pub(super) fn seen(&mut self, path: String, hash: String, now: OffsetDateTime) -> Vec<Command> {
        if self.state.open_calls.is_empty() {
            return Vec::new();
        }
        self.append(vec![Record::Seen(Seen {
            at: now,
            path,
            hash,
        })])
    }

    /// A shell command's changes, logged as edits already written.
    pub(super) fn shell_changed(
        &mut self,
        id: String,
        changes: Vec<edit::Change>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if self.state.open_calls.first().is_none_or(|c| c.id != id) {
            return Vec::new();
        }
        let records = changes
            .into_iter()
            .map(|c| {
                Record::Edit(Edit {
                    at: now,
                    call: id.clone(),
                    path: c.path,
                    by: EditBy::Shell,
                    before: c.before,
                    after: c.after,
                    added: Some(c.diff.added),
                    removed: Some(c.diff.removed),
                    diff: c.diff.text,
                    written: true,
                })
            })
            .collect();
        self.append(records)
    }

    /// The file of the edit in flight was opened: decide the change.
    fn opened(
        &mut self,
        call: ToolCall,
        id: String,
        opened: Result<Opened, String>,
        keys: &Keys,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        // The edit as its hooks left it (`call`), as the file was opened.
        let Some(tool) = self.running_call(&id).map(|_| tools::parse(&call)) else {
            return vec![Command::show(format!(
                "ignored an opened file for tool call {id}, which is not running"
            ))];
        };
        let decided = opened.and_then(|o| self.decide(&tool?, o, keys));
        match decided {
            Ok(Decided::Unchanged(text)) | Err(text) => self.answer(id, text, now),
            Ok(Decided::Denied(rule, path, text)) => {
                let mut cmds = self.append(vec![Record::Approved(Approved {
                    at: now,
                    call: id.clone(),
                    path,
                    answer: Answer::No,
                    tool: Asked::Edit,
                    rule: Some(rule),
                })]);
                cmds.extend(self.answer(id, text, now));
                cmds
            }
            Ok(Decided::Change(mut staged, before)) => {
                staged.id.clone_from(&id);
                let shown = if staged.outside {
                    format!("{} (outside the working tree)", staged.path)
                } else {
                    staged.shown.clone()
                };
                let cmd = Command::File(FileCommand::Stage {
                    id,
                    shown,
                    before: before.zip(staged.before.clone()),
                    after: staged.content.clone(),
                    diff: staged.diff.text.clone(),
                    ask: staged.asked,
                    once: staged.outside,
                });
                self.phase = Phase::Editing {
                    call,
                    staged: Some(staged),
                };
                vec![cmd]
            }
        }
    }

    /// What an edit makes of the file, or why it is refused. The model's
    /// text is about the file as it was shown it (keys as `[key]`, bytes
    /// that are not UTF-8 as U+FFFD): [`edit::View`] makes the bytes of
    /// it, keeping every byte the model did not ask to change.
    fn decide(&mut self, tool: &Tool, o: Opened, keys: &Keys) -> Result<Decided, String> {
        let name = tool.name();
        let shown = o.shown.clone();
        self.may_edit(name, &o)?;
        let after = edited(tool, &o, keys)?;
        if o.content.as_deref() == Some(after.as_slice()) {
            return Ok(Decided::Unchanged(format!(
                "unchanged: {shown} already holds exactly that"
            )));
        }
        // A permission rule (`edit(…)`, `write(…)`) on the path relative
        // to the tree (absolute outside it): a deny one refuses; an allow
        // one allows it inside the tree.
        let kind = if name == "edit_file" { "edit" } else { "write" };
        let cwd = self.state.header.as_ref().map_or("", |h| h.cwd.as_str());
        let subject = o
            .path
            .strip_prefix(cwd)
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|_| !cwd.is_empty() && !o.outside)
            .unwrap_or(&o.path)
            .to_owned();
        let by_rule = match self.settings.rules.decide(kind, &subject) {
            Verdict::Deny(rule) => {
                let text = crate::rules::denied(&rule);
                return Ok(Decided::Denied(rule, o.path, text));
            }
            Verdict::Allow(rule) if !o.outside => Some(rule),
            _ => None,
        };
        // Outside the tree, only the user's answer to that question allows it.
        let allowed = by_rule.is_some()
            || !o.outside && (self.settings.allow_edits || self.state.edits_always);
        if !allowed && !self.settings.interactive {
            return Err(format!(
                "error: {name}: edits need the user's approval and there is no terminal to ask; \
                 they are allowed with --allow-edits (or allow_edits in config.json)"
            ));
        }
        let diff = edit::diff_bytes(&shown, o.content.as_deref(), &after, keys);
        Ok(Decided::Change(
            Staged {
                id: String::new(),
                tool: name,
                path: o.path,
                shown,
                before: o.hash,
                content: after,
                mode: o.mode,
                diff,
                asked: !allowed,
                rule: by_rule,
                outside: o.outside,
                links: o.links,
            },
            o.content,
        ))
    }

    /// Why the file `o` may not be changed by the edit `name` at all:
    /// where it is, and whether this session read it as it is now.
    fn may_edit(&self, name: &str, o: &Opened) -> Result<(), String> {
        let shown = &o.shown;
        // Where a write may land (issue 27, item 6): a grant is for
        // reading; revolve's own files are never written by a tool.
        if o.own {
            return Err(format!(
                "error: {name}: {shown} is in revolve's own state folder (session logs, spilled \
                 output, the content store); no tool writes there"
            ));
        }
        if o.git {
            return Err(format!(
                "error: {name}: {shown} is in the repository's .git folder (config, hooks), \
                 which no tool writes; change it with git yourself"
            ));
        }
        if o.outside && !self.settings.interactive {
            return Err(format!(
                "error: {name}: {shown} is outside the working tree; a grant allows reading \
                 only, and writing outside the tree needs the user's yes at a terminal \
                 (--allow-edits covers the working tree only); nothing was written"
            ));
        }
        match (&o.content, self.state.files.get(&o.path)) {
            (Some(_), None) => {
                return Err(format!(
                    "error: {name}: {shown} has not been read in this session; read it with \
                     read_file first, then change it"
                ))
            }
            (Some(_), Some(seen)) if o.hash.as_ref() != Some(seen) => {
                return Err(format!(
                    "error: {name}: {shown} changed on disk since this session last read or \
                     wrote it; read it again before changing it"
                ))
            }
            (None, Some(_)) => {
                return Err(format!(
                    "error: {name}: {shown} was removed since this session last read or wrote \
                     it; look again before writing it"
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// Both contents are stored and the user answered (if asked): log the
    /// edit, then write it.
    fn staged(
        &mut self,
        call: ToolCall,
        mut staged: Staged,
        answer: Option<Answer>,
        after: String,
        error: Option<String>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let id = call.id.clone();
        if let Some(e) = error {
            let text = format!(
                "error: {}: cannot keep the prior content of {} ({e}); nothing was written",
                staged.tool, staged.shown
            );
            return self.answer(id, text, now);
        }
        let mut records = Vec::new();
        if let Some(rule) = staged.rule.take() {
            records.push(Record::Approved(Approved {
                at: now,
                call: id.clone(),
                path: staged.path.clone(),
                answer: Answer::Yes,
                tool: Asked::Edit,
                rule: Some(rule),
            }));
        }
        if staged.asked {
            let mut answer = answer.unwrap_or(Answer::No);
            // A write outside the tree is allowed once: "always" there is
            // a yes, and never allows later edits.
            if staged.outside && answer == Answer::Always {
                answer = Answer::Yes;
            }
            records.push(Record::Approved(Approved {
                at: now,
                call: id.clone(),
                path: staged.path.clone(),
                answer,
                tool: if staged.outside {
                    Asked::Outside
                } else {
                    Asked::Edit
                },
                rule: None,
            }));
            if answer == Answer::No {
                let mut cmds = self.append(records);
                let text = format!(
                    "error: the user refused this change of {}; nothing was written. Do not \
                     try it again as it is: ask what they want instead.",
                    staged.shown
                );
                cmds.extend(self.answer(id, text, now));
                return cmds;
            }
        }
        records.push(Record::Edit(Edit {
            at: now,
            call: id.clone(),
            path: staged.path.clone(),
            by: staged.tool.into(),
            before: staged.before.clone(),
            after: Some(after),
            diff: staged.diff.text.clone(),
            added: Some(staged.diff.added),
            removed: Some(staged.diff.removed),
            written: false,
        }));
        let mut cmds = self.append(records);
        cmds.push(Command::File(FileCommand::Write {
            id,
            path: staged.path.clone(),
            content: std::mem::take(&mut staged.content),
            mode: staged.mode,
            expect: staged.before.clone(),
        }));
        self.phase = Phase::Editing {
            call,
            staged: Some(staged),
        };
        cmds
    }

    /// The write of the logged edit ran.
    fn wrote(
        &mut self,
        call: ToolCall,
        staged: Staged,
        error: Option<String>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let id = call.id.clone();
        let written = Record::Written(Written {
            at: now,
            call: id.clone(),
            path: staged.path.clone(),
            error: error.clone(),
        });
        let mut cmds = self.append(vec![written]);
        let text = match error {
            Some(e) => format!(
                "error: {}: cannot write {} ({e}); the file is unchanged",
                staged.tool, staged.shown
            ),
            None => {
                let edit::Diff {
                    added,
                    removed,
                    text,
                } = &staged.diff;
                let what = if staged.before.is_none() {
                    "created"
                } else {
                    "changed"
                };
                let mut text = format!(
                    "{what} {} (+{added} -{removed} lines)\n{}",
                    staged.shown,
                    tools::head_tail(text, "")
                );
                if let Some(split) = split_links(&staged) {
                    text = format!("{split}\n{text}");
                    cmds.push(Command::show(format!("revolve: {split}")));
                }
                text
            }
        };
        // Its `PostToolUse` hooks first (a formatter after an edit).
        cmds.extend(self.after_tool(call, text, None, false, now));
        cmds
    }

    /// At a resume: what the file of the edit a crash left unwritten
    /// holds, logged as the write's outcome and told.
    pub(super) fn found(&mut self, hash: Option<String>, now: OffsetDateTime) -> Vec<Command> {
        let Some(e) = self.state.pending_edit.clone() else {
            return Vec::new();
        };
        let (error, told) = if hash == e.after {
            (
                None,
                "it holds the new content: the edit is logged as written",
            )
        } else if hash == e.before {
            (
                Some("revolve stopped before writing it".to_owned()),
                "it holds what it held before: the edit is logged as not written",
            )
        } else {
            (
                Some(
                    "revolve stopped around writing it; the file holds neither content".to_owned(),
                ),
                "it holds neither the prior nor the new content (both are kept in the content \
                 store); read it again before editing it",
            )
        };
        let mut cmds = self.append(vec![Record::Written(Written {
            at: now,
            call: e.call.clone(),
            path: e.path.clone(),
            error,
        })]);
        cmds.push(Command::show(format!(
            "revolve: the last run stopped between logging an edit of {} and writing it; {told}",
            e.path
        )));
        cmds.push(Command::sync());
        cmds
    }

    /// `/rewind`, `revolve rewind`: log the rewind, then restore the files.
    pub(super) fn rewind(
        &mut self,
        turns: usize,
        scope: Scope,
        undo: bool,
        force: bool,
        on_disk: &BTreeMap<String, Option<String>>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if self.busy() {
            return vec![Command::User(UserCommand::Refused(
                "rewind: a turn is still running; rewind after it".into(),
            ))];
        }
        let planned = if undo {
            edit::plan_undo(&self.state, force, on_disk, now)
        } else {
            edit::plan(&self.state, turns, scope, force, on_disk, now)
        };
        match planned {
            Err(why) => vec![Command::User(UserCommand::Refused(why))],
            Ok(r) if r.files.is_empty() => {
                let told = edit::describe(&r);
                let mut cmds = self.append(vec![Record::Rewound(r)]);
                cmds.push(Command::sync());
                cmds.push(Command::show(told));
                cmds
            }
            // The plan is logged before any file is touched; what was done
            // is logged when the shell says what the files hold
            // (`restored`).
            Ok(r) => {
                let files = r.files.clone();
                let mut cmds = self.append(vec![Record::Rewinding(r)]);
                cmds.push(Command::sync());
                self.phase = Phase::Rewinding;
                cmds.push(Command::File(FileCommand::Restore(files)));
                cmds
            }
        }
    }

    /// The files of the pending rewind were restored, or a resume found
    /// it unfinished: the `rewound` of what the files hold is logged and
    /// told; files not restored are named, and (unless at a resume) the
    /// rewind is refused so the command fails.
    pub(super) fn restored(
        &mut self,
        on_disk: &BTreeMap<String, Option<String>>,
        errors: &BTreeMap<String, String>,
        resumed: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let Some(planned) = self.state.pending_rewind.clone() else {
            return Vec::new();
        };
        let (done, failed) = edit::settle(&self.state, &planned, on_disk, errors, now);
        let told = edit::describe(&done);
        let mut cmds = self.append(vec![Record::Rewound(done.clone())]);
        cmds.push(Command::sync());
        if resumed {
            cmds.push(Command::show(format!(
                "revolve: the last run stopped during a rewind; what it had done is logged: {told}"
            )));
            if !failed.is_empty() {
                cmds.push(Command::show(format!(
                    "revolve: {}",
                    edit::describe_failed(&planned, &done, &failed)
                )));
            }
            return cmds;
        }
        cmds.push(Command::show(told));
        if !failed.is_empty() {
            cmds.push(Command::User(UserCommand::Refused(edit::describe_failed(
                &planned, &done, &failed,
            ))));
        }
        cmds
    }
}

/// What a written edit of a hard-linked file tells: the write put a new
/// file at this name (whole or not at all, as every edit), so the file's
/// other names keep the old content.
fn split_links(staged: &Staged) -> Option<String> {
    (staged.links > 1).then(|| {
        format!(
            "note: {} had {} hard links; the edit wrote a new file at this name, and the \
             other {} name(s) still hold the old content",
            staged.shown,
            staged.links,
            staged.links - 1
        )
    })
}

enum Decided {
    Unchanged(String),
    /// A permission rule denies it: the rule, the path, the result.
    Denied(String, String, String),
    /// The change, and the content before it.
    Change(Staged, Option<Vec<u8>>),
}

/// The bytes the edit `tool` makes of the file `o` (the model's text is
/// about the file as shown, keys as `[key]`: see [`View`]), or why it
/// cannot.
fn edited(tool: &Tool, o: &Opened, keys: &Keys) -> Result<Vec<u8>, String> {
    let (name, shown) = (tool.name(), &o.shown);
    match tool {
        Tool::EditFile {
            old_string,
            new_string,
            replace_all,
            ..
        } => {
            let Some(bytes) = &o.content else {
                return Err(format!(
                    "error: edit_file: no such file: {shown}; create it with write_file"
                ));
            };
            View::of(bytes, keys).replace(old_string, new_string, *replace_all, shown)
        }
        Tool::WriteFile { content, .. } => {
            let content = edit::keep_endings(o.content.as_deref(), content);
            match &o.content {
                Some(bytes) => Ok(View::of(bytes, keys).rewrite(&content)),
                None => Ok(content.into_bytes()),
            }
        }
        _ => Err(format!("error: {name} is no edit")),
    }
}
