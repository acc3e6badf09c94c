//! Parsing `POST /<name>[?hold-ms=N]`.

/// One increment request.
pub(crate) struct Counter {
    /// The lock name (and the counter's name).
    pub name: String,
    /// How long to hold the lock before writing, if asked.
    pub hold_ms: Option<u64>,
    /// `lock=none`: increment without taking the lock (a baseline for
    /// benchmarks; concurrent increments of one name may then be lost).
    pub unlocked: bool,
}

/// Parses a request target such as `/orders?hold-ms=20`.
pub(crate) fn parse(target: &str) -> Result<Counter, String> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let name = path.trim_start_matches('/');
    if name.is_empty() {
        return Err("no counter name: POST /<name>[?hold-ms=N]".to_owned());
    }
    let mut hold_ms = None;
    let mut unlocked = false;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("hold-ms", value)) => {
                hold_ms = Some(value.parse().map_err(|_| {
                    format!("hold-ms must be a number of milliseconds, got {value:?}")
                })?);
            }
            Some(("lock", "none")) => unlocked = true,
            _ => {
                return Err(format!(
                    "unknown query parameter {pair:?} (expected hold-ms=N or lock=none)"
                ));
            }
        }
    }
    Ok(Counter {
        name: name.to_owned(),
        hold_ms,
        unlocked,
    })
}
