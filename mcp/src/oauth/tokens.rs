//! The tokens file, `mcp-tokens.json` beside the config (`0600`): per
//! server name, the URL it was logged in at, the authorization server and
//! client, and the tokens.
//!
//! ```json
//! {"version": 1, "servers": {"docs": {"url": "https://docs.example.com/mcp",
//!   "resource": "https://docs.example.com/mcp", "issuer": "https://auth.example.com",
//!   "token_endpoint": "https://auth.example.com/token", "client_id": "…",
//!   "redirect_uri": "http://127.0.0.1:40123/callback",
//!   "access_token": "…", "refresh_token": "…", "expires_at": 1765000000, "scope": "read"}}}
//! ```
//!
//! An entry is used only for the URL it was made for: a server renamed to
//! another URL sends nothing until logged in again. Every change is a
//! read-modify-write under an OS lock on `mcp-tokens.json.lock` and a
//! temp file renamed over the old one, so two sessions refreshing at once
//! lose neither's tokens.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One server's login.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The server's URL when it was logged in.
    pub url: String,
    /// The resource the tokens are for (RFC 8707).
    pub resource: String,
    /// The authorization server.
    pub issuer: String,
    /// Where tokens are asked for and refreshed.
    pub token_endpoint: String,
    /// The client's id at that authorization server.
    pub client_id: String,
    /// The client's secret, when its registration gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI the client was registered with.
    #[serde(default)]
    pub redirect_uri: String,
    /// The bearer token sent to the server.
    pub access_token: String,
    /// The token that gets a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, Unix seconds, if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scope granted, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

#[derive(Default, Serialize, Deserialize)]
struct FileForm {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

/// The tokens file at a path.
#[derive(Clone, Debug)]
pub struct Tokens {
    path: PathBuf,
}

impl Tokens {
    /// The file at `path` (it need not exist).
    pub fn at(path: &Path) -> Tokens {
        Tokens {
            path: path.to_owned(),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Server `name`'s login, if one is kept for `url`.
    pub fn get(&self, name: &str, url: &str) -> Option<Entry> {
        self.read().servers.remove(name).filter(|e| e.url == url)
    }

    /// Server `name`'s login, whatever its URL (a client to reuse).
    pub fn any(&self, name: &str) -> Option<Entry> {
        self.read().servers.remove(name)
    }

    /// Changes server `name`'s entry under the lock: `change` gets what
    /// is kept (any URL) and returns what to keep (`None`: forget it) and
    /// a value for the caller.
    pub fn update<T>(
        &self,
        name: &str,
        change: impl FnOnce(Option<Entry>) -> (Option<Entry>, T),
    ) -> std::io::Result<T> {
        let _lock = self.lock()?;
        let mut all = self.read();
        let (entry, out) = change(all.servers.remove(name));
        if let Some(entry) = entry {
            all.servers.insert(name.to_owned(), entry);
        }
        all.version = 1;
        self.write(&all)?;
        Ok(out)
    }

    fn read(&self) -> FileForm {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    fn write(&self, all: &FileForm) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(all).map_err(std::io::Error::other)?;
        let temp = self.path.with_extension("json.tmp");
        let _ = std::fs::remove_file(&temp);
        let mut file = private(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, &self.path)
    }

    fn lock(&self) -> std::io::Result<File> {
        if let Some(dir) = self.path.parent() {
            create_dir(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.path.with_extension("json.lock"))?;
        file.lock()?;
        Ok(file)
    }
}

/// A new file only its owner reads (`0600`).
fn private(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600); // not policy: the file's permissions, tokens inside
    }
    options.open(path)
}

/// The config folder, made `0700` when revolve makes it.
fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700); // not policy: a private folder's permissions
    }
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str, token: &str) -> Entry {
        Entry {
            url: url.into(),
            access_token: token.into(),
            ..Entry::default()
        }
    }

    #[test]
    fn entries_are_kept_by_name_for_their_url_in_a_private_file() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-tokens-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let tokens = Tokens::at(&dir.join("cfg/mcp-tokens.json"));
        assert_eq!(tokens.get("a", "http://x"), None);
        tokens
            .update("a", |_| (Some(entry("http://x", "t1")), ()))
            .unwrap();
        tokens
            .update("b", |_| (Some(entry("http://y", "t2")), ()))
            .unwrap();
        assert_eq!(tokens.get("a", "http://x").unwrap().access_token, "t1");
        assert_eq!(tokens.get("a", "http://other"), None);
        assert_eq!(tokens.any("a").unwrap().url, "http://x");
        let forgot = tokens.update("a", |e| (None, e.is_some())).unwrap();
        assert!(forgot);
        assert_eq!(tokens.any("a"), None);
        assert_eq!(tokens.get("b", "http://y").unwrap().access_token, "t2");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(tokens.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
