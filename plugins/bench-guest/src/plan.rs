//! How each op of a benchmark loop picks its mode: the one copy, used by this
//! guest (`mod plan;`) and by the host's native clients in `wardlock-bench`
//! (`tests/src/bin/wardlock-bench/check.rs` includes this file with `#[path]`),
//! so native and guest clients draw the same modes. Plain Rust with no
//! dependency, so it builds for wasm32-wasip2 and for the host alike; each side
//! uses part of it.

/// How each op of a loop picks its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    Exclusive,
    Shared,
    /// Each op is a write with probability `write_percent` %, drawn from `seed`
    /// and the op's index.
    Mixed {
        write_percent: u64,
        seed: u64,
    },
}

impl Plan {
    /// Parses the guest's MODE argument: `exclusive`, `shared` or
    /// `rw:PERCENT:SEED`.
    pub(crate) fn parse(text: &str) -> Option<Plan> {
        match text {
            "exclusive" => Some(Plan::Exclusive),
            "shared" => Some(Plan::Shared),
            _ => {
                let mut fields = text.strip_prefix("rw:")?.split(':');
                let write_percent = fields.next()?.parse().ok().filter(|p| *p <= 100)?;
                let seed = fields.next()?.parse().ok()?;
                fields.next().is_none().then_some(Plan::Mixed {
                    write_percent,
                    seed,
                })
            }
        }
    }

    /// The guest's MODE argument for this plan ([`Plan::parse`] reads it back).
    pub(crate) fn arg(self) -> String {
        match self {
            Plan::Exclusive => "exclusive".to_owned(),
            Plan::Shared => "shared".to_owned(),
            Plan::Mixed {
                write_percent,
                seed,
            } => format!("rw:{write_percent}:{seed}"),
        }
    }

    /// True when op `index` writes (takes the lock exclusively), false when it
    /// reads (shared).
    pub(crate) fn writes(self, index: u64) -> bool {
        match self {
            Plan::Exclusive => true,
            Plan::Shared => false,
            Plan::Mixed {
                write_percent,
                seed,
            } => {
                splitmix64(seed.wrapping_mul(0x1_0000_0001).wrapping_add(index)) % 100
                    < write_percent
            }
        }
    }
}

/// SplitMix64: a tiny deterministic mixer.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_plan_writes_about_the_asked_share() {
        let plan = Plan::Mixed {
            write_percent: 20,
            seed: 3,
        };
        let writes = (0..10_000).filter(|i| plan.writes(*i)).count();
        assert!((1_800..=2_200).contains(&writes), "{writes}");
    }

    #[test]
    fn the_guest_reads_back_every_plan() {
        for plan in [
            Plan::Exclusive,
            Plan::Shared,
            Plan::Mixed {
                write_percent: 35,
                seed: 7,
            },
        ] {
            assert_eq!(Plan::parse(&plan.arg()), Some(plan));
        }
        for bad in ["", "rw:101:1", "rw:5", "rw:5:1:2", "write"] {
            assert_eq!(Plan::parse(bad), None, "{bad}");
        }
    }
}
