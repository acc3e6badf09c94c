//! The events `handle` understands (see the crate's documentation).

use std::time::Duration;

/// One parsed event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Hold {
        name: String,
        hold: Duration,
    },
    Wait {
        name: String,
        timeout: Option<Duration>,
    },
    Hoard {
        prefix: String,
        count: usize,
    },
    Trap {
        name: String,
        hold: Duration,
    },
}

impl Event {
    /// Parses `text`.
    ///
    /// # Errors
    /// An unknown event or a bad argument, named.
    pub(crate) fn parse(text: &str) -> Result<Event, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["hold", name, ms] => Ok(Event::Hold {
                name: (*name).to_owned(),
                hold: Duration::from_millis(number(ms)?),
            }),
            ["wait", name] => Ok(Event::Wait {
                name: (*name).to_owned(),
                timeout: None,
            }),
            ["wait", name, ms] => Ok(Event::Wait {
                name: (*name).to_owned(),
                timeout: Some(Duration::from_millis(number(ms)?)),
            }),
            ["hoard", prefix, count] => Ok(Event::Hoard {
                prefix: (*prefix).to_owned(),
                count: usize::try_from(number(count)?).map_err(|e| e.to_string())?,
            }),
            ["trap", name] => Ok(Event::Trap {
                name: (*name).to_owned(),
                hold: Duration::ZERO,
            }),
            ["trap", name, ms] => Ok(Event::Trap {
                name: (*name).to_owned(),
                hold: Duration::from_millis(number(ms)?),
            }),
            _ => Err(format!(
                "unknown event {text:?}: expected `hold NAME MS`, `wait NAME [TIMEOUT_MS]`, `hoard PREFIX N` or `trap NAME [MS]`"
            )),
        }
    }
}

fn number(word: &str) -> Result<u64, String> {
    word.parse()
        .map_err(|_| format!("{word:?} is not a whole number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_parse_and_bad_ones_are_named() {
        assert_eq!(
            Event::parse("wait acme/a 300"),
            Ok(Event::Wait {
                name: "acme/a".into(),
                timeout: Some(Duration::from_millis(300))
            })
        );
        assert!(Event::parse("hold acme/a soon").is_err_and(|e| e.contains("\"soon\"")));
        assert!(Event::parse("dance").is_err_and(|e| e.contains("unknown event")));
    }
}
