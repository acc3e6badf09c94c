//! Durations given in seconds, by flag or config key: positive and finite, or
//! an error naming where.

use std::time::Duration;

use anyhow::bail;

use crate::registry::Mistake;

/// `secs` as a duration, or an error naming `flag` unless it is positive and finite.
///
/// # Errors
/// `secs` is zero, negative, infinite or not a number.
pub(crate) fn positive_secs(flag: &str, secs: f64) -> anyhow::Result<Duration> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        bail!("{flag} must be a positive number of seconds, got {secs}")
    }
}

/// `secs` at config key `key` as a duration.
///
/// # Errors
/// It is not a positive number of seconds, named by `key`.
pub(crate) fn secs_at(key: &str, secs: f64) -> Result<Duration, Mistake> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err((
            key.to_owned(),
            format!("must be a positive number of seconds, got {secs}"),
        ))
    }
}
