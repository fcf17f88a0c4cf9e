//! `request_file_grant` and `agent_info`.

use super::*;

/// The path a `request_file_grant` asks for, made canonical, for the core
/// to decide on; or why it cannot be granted.
pub(crate) fn request_grant(scope: &Scope, raw: &str) -> Outcome {
    if let Err(e) = too_long(raw) {
        return Outcome::text(e);
    }
    if !Path::new(raw).is_absolute() {
        return Outcome::text(format!(
            "error: request_file_grant needs an absolute path, not {raw}"
        ));
    }
    let path = match fs::canonicalize(raw) {
        Ok(path) => path,
        Err(e) if is_missing(&e) => return Outcome::text(format!("error: no such file: {raw}")),
        Err(e) => return Outcome::text(format!("error: cannot open {raw}: {e}")),
    };
    let Some(shown) = path.to_str().map(str::to_owned) else {
        return Outcome::text(format!(
            "error: {} is not valid UTF-8 and cannot be granted",
            path.display()
        ));
    };
    if scope.allows(&path) {
        return Outcome::text(format!(
            "{shown} is already readable by this session; no grant is needed"
        ));
    }
    Outcome {
        grant: Some(shown),
        ..Outcome::text(String::new())
    }
}

pub(crate) fn agent_info(ctx: &Context) -> Result<String, String> {
    #[derive(Serialize)]
    struct Shown<'a> {
        #[serde(flatten)]
        info: &'a AgentInfo,
        working_dir: &'a Path,
    }
    serde_json::to_string_pretty(&Shown {
        info: &ctx.info,
        working_dir: &ctx.root,
    })
    .map_err(|e| format!("error: cannot describe this session: {e}"))
}
