//! The servers of a session: each started on its own thread, their tools
//! listed, calls passed on. A server that fails to start, exits or hangs
//! is said once and its calls get errors; the others go on.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use revolve_core::mcp::{Listed, Server, Transport as Kind};
use serde_json::Value;

use crate::client::{Client, Error, Transport};
use crate::http::Http;
use crate::oauth::tokens::Tokens;
use crate::oauth::Auth;
use crate::stdio::Stdio;

/// A server to run: its configuration with values expanded, where its
/// process runs and where its stderr goes.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The server's configuration, variables expanded.
    pub server: Server,
    /// The directory its process starts in.
    pub cwd: PathBuf,
    /// The file its stderr is appended to.
    pub stderr_log: PathBuf,
    /// Variables a server process does not inherit (API keys).
    pub hidden: Vec<&'static str>,
    /// The values its configuration took from variables, hidden from its
    /// results.
    pub secrets: Vec<String>,
    /// The OAuth tokens file, for an HTTP server configured without an
    /// `Authorization` header (`None`: no login is tried).
    pub tokens: Option<PathBuf>,
}

/// Where a server stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Started, not answered yet.
    Starting,
    /// Up, with the tools it lists and the protocol version agreed.
    Ready {
        /// The tools it offers, in its order.
        tools: Vec<Listed>,
        /// The protocol version both sides agreed on.
        version: String,
        /// The server's name and version, as it gave them.
        info: String,
    },
    /// It could not start, or it went away; why.
    Failed(String),
    /// It needs the user to log in (`revolve mcp login NAME`).
    NeedsLogin,
}

struct Slot {
    spec: Spec,
    status: Status,
    client: Option<Client>,
    /// Whether the user was told of its failure.
    told: bool,
}

/// The running servers.
pub struct Hub {
    slots: Vec<Arc<Mutex<Slot>>>,
    /// How many are still starting, and the signal when one is done.
    starting: Arc<(Mutex<usize>, Condvar)>,
    /// The lines already said by [`Hub::once`].
    said: Mutex<std::collections::BTreeSet<String>>,
}

impl Hub {
    /// Starts every server now, each on a thread, each allowed `timeout`
    /// to start and list its tools.
    pub fn start(specs: Vec<Spec>, timeout: Duration) -> Hub {
        let starting = Arc::new((Mutex::new(specs.len()), Condvar::new()));
        let slots: Vec<Arc<Mutex<Slot>>> = specs
            .into_iter()
            .map(|spec| {
                Arc::new(Mutex::new(Slot {
                    spec,
                    status: Status::Starting,
                    client: None,
                    told: false,
                }))
            })
            .collect();
        for slot in &slots {
            // Spawned here, on the caller's thread (the main one), so that
            // a server's parent-death signal follows revolve and not a
            // starting thread that ends (see `stdio`).
            let transport = open(&lock(slot).spec);
            let slot = Arc::clone(slot);
            let starting = Arc::clone(&starting);
            std::thread::spawn(move || {
                let started = transport
                    .and_then(|t| Client::connect(t, timeout))
                    .and_then(|mut client| {
                        let tools = client.list_tools(timeout)?;
                        Ok((client, tools))
                    });
                {
                    let mut s = lock(&slot);
                    match started {
                        Ok((client, tools)) => {
                            s.status = Status::Ready {
                                tools,
                                version: client.version.clone(),
                                info: client.server_info.clone(),
                            };
                            s.client = Some(client);
                        }
                        Err(Error::Login(_)) => s.status = Status::NeedsLogin,
                        Err(e) => s.status = Status::Failed(e.to_string()),
                    }
                }
                let (count, done) = &*starting;
                let mut count = count.lock().unwrap_or_else(|p| p.into_inner());
                *count = count.saturating_sub(1);
                done.notify_all();
            });
        }
        Hub {
            slots,
            starting,
            said: Mutex::default(),
        }
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Waits until every server is up or failed, at most `bound`; whether
    /// they all are.
    pub fn wait(&self, bound: Duration) -> bool {
        let deadline = Instant::now() + bound;
        let (count, done) = &*self.starting;
        let mut count = count.lock().unwrap_or_else(|p| p.into_inner());
        while *count > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            count = done
                .wait_timeout(count, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// The tools of the servers that are up, by server, listed again
    /// first where a server said they changed (`timeout` for that).
    pub fn tools(&self, timeout: Duration) -> Vec<(String, Vec<Listed>)> {
        let mut out = Vec::new();
        for slot in &self.slots {
            let mut s = lock(slot);
            let relist = s.client.as_mut().is_some_and(Client::list_changed);
            if relist {
                if let Some(client) = s.client.as_mut() {
                    if let Ok(tools) = client.list_tools(timeout) {
                        if let Status::Ready { tools: t, .. } = &mut s.status {
                            *t = tools;
                        }
                    }
                }
            }
            if let Status::Ready { tools, .. } = &s.status {
                out.push((s.spec.server.name.clone(), tools.clone()));
            }
        }
        out
    }

    /// Calls `tool` of `server` with `arguments` (the model's JSON text),
    /// waiting at most `timeout`: the result object, or why there is none.
    /// A server that went away is not called again.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
        timeout: Duration,
    ) -> Result<Value, String> {
        let Some(slot) = self
            .slots
            .iter()
            .find(|s| lock(s).spec.server.name == server)
        else {
            return Err(format!("no server is named {server}"));
        };
        let arguments: Value = if arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(arguments)
                .map_err(|e| format!("the arguments are not JSON: {e}"))?
        };
        let mut s = lock(slot);
        let Some(client) = s.client.as_mut() else {
            return Err(match &s.status {
                Status::Failed(why) => format!("it is not running ({why})"),
                Status::NeedsLogin => Error::Login(server.to_owned()).to_string(),
                _ => "it is still starting".to_owned(),
            });
        };
        let mut called = client.call(tool, arguments.clone(), timeout);
        // An HTTP server that forgot the session (a 404) or restarted is
        // connected to again, once, and asked again.
        if matches!(called, Err(Error::Gone(_)))
            && matches!(s.spec.server.transport, Kind::Http { .. })
        {
            called = connect(&s.spec, timeout).and_then(|mut fresh| {
                let result = fresh.call(tool, arguments, timeout);
                s.client = Some(fresh);
                result
            });
        }
        match called {
            Ok(result) => Ok(result),
            // The server answered, refusing: an error result for the
            // model, nothing for the user.
            Err(Error::Rpc { code, message }) => Ok(serde_json::json!({
                "content": [{"type": "text",
                             "text": format!("the server refused the call ({code}): {message}")}],
                "isError": true,
            })),
            Err(e @ Error::Login(_)) => {
                s.client = None;
                s.status = Status::NeedsLogin;
                s.told = true;
                Err(e.to_string())
            }
            Err(e @ Error::Gone(_)) => {
                s.client = None;
                s.status = Status::Failed(e.to_string());
                s.told = true;
                Err(e.to_string())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// The values every server's configuration took from variables, and
    /// the OAuth tokens sent.
    pub fn secrets(&self) -> Vec<String> {
        self.slots
            .iter()
            .flat_map(|s| {
                let s = lock(s);
                let mut all = s.spec.secrets.clone();
                all.extend(s.client.iter().flat_map(Client::secrets));
                all
            })
            .collect()
    }

    /// Every server: its name, configuration and status.
    pub fn statuses(&self) -> Vec<(Server, Status)> {
        self.slots
            .iter()
            .map(|s| {
                let s = lock(s);
                (s.spec.server.clone(), s.status.clone())
            })
            .collect()
    }

    /// Those of `lines` not said before by this hub (a collision of tool
    /// names, found again before every turn, is said once).
    pub fn once(&self, lines: Vec<String>) -> Vec<String> {
        let mut said = self.said.lock().unwrap_or_else(|p| p.into_inner());
        lines
            .into_iter()
            .filter(|l| said.insert(l.clone()))
            .collect()
    }

    /// The names of the servers still starting.
    pub fn starting(&self) -> Vec<String> {
        self.slots
            .iter()
            .filter_map(|slot| {
                let s = lock(slot);
                (s.status == Status::Starting).then(|| s.spec.server.name.clone())
            })
            .collect()
    }

    /// A line for each server that failed since the last time asked.
    pub fn take_failures(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for slot in &self.slots {
            let mut s = lock(slot);
            if s.status == Status::NeedsLogin && !s.told {
                lines.push(revolve_core::mcp::oauth::login_line(&s.spec.server.name));
                s.told = true;
            }
            if let Status::Failed(why) = &s.status {
                if !s.told {
                    lines.push(format!(
                        "revolve: MCP server {} ({}): {why}; its tools are not offered (its stderr: {})",
                        s.spec.server.name,
                        s.spec.server.origin,
                        s.spec.stderr_log.display()
                    ));
                    s.told = true;
                }
            }
        }
        lines
    }
}

fn connect(spec: &Spec, timeout: Duration) -> Result<Client, Error> {
    Client::connect(open(spec)?, timeout)
}

/// The server's transport: its process started, or its URL.
fn open(spec: &Spec) -> Result<Box<dyn Transport>, Error> {
    Ok(match &spec.server.transport {
        Kind::Stdio { command, args, env } => Box::new(Stdio::spawn(
            command,
            args,
            env,
            &spec.hidden,
            &spec.cwd,
            &spec.stderr_log,
        )?),
        Kind::Http { url, headers } => {
            let auth = spec
                .tokens
                .as_ref()
                .filter(|_| revolve_core::mcp::oauth::wanted(headers))
                .map(|path| Auth::new(&spec.server.name, url, Tokens::at(path)));
            Box::new(Http::new(url, headers, auth))
        }
    })
}

/// The slot, even when a thread panicked holding it (its state is whole:
/// every change is one assignment).
fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}
