//! A lock name's advisory-lock key: the one sqlx's `PgAdvisoryLock::new(NAME)`
//! uses, so a Rust service on sqlx and wardlock's guests exclude each other on
//! the same name.
//!
//! sqlx derives it with HKDF-SHA256 (no salt, the name as input key material,
//! the info string below) expanded to 8 bytes, read little-endian as an `i64`,
//! and locks it in PostgreSQL's single-`bigint` advisory key space
//! (`pg_advisory_lock(bigint)`). `pg_locks` shows such a key split in two:
//! `classid` holds its high 32 bits, `objid` its low 32 bits, `objsubid` is 1.

use hkdf::Hkdf;
use sha2::Sha256;

use wardlock_backend::name::LockName;

/// The HKDF info string of sqlx's `PgAdvisoryLock`.
const SQLX_INFO: &[u8] = b"SQLx (Rust) Postgres advisory lock";

/// The advisory-lock key of lock `name` (see the module doc).
pub fn advisory_key(name: &LockName) -> i64 {
    key_of(name.as_str())
}

/// The advisory-lock key of any text, as sqlx derives it.
pub(crate) fn key_of(text: &str) -> i64 {
    let hkdf = Hkdf::<Sha256>::new(None, text.as_bytes());
    let mut bytes = [0u8; 8];
    // 8 bytes is far below HKDF-SHA256's limit of 255 × 32: expand cannot fail.
    let _ = hkdf.expand(SQLX_INFO, &mut bytes);
    i64::from_le_bytes(bytes)
}

/// How `pg_locks` shows a single-`bigint` advisory key: (`classid`, `objid`),
/// its high and low 32 bits as unsigned `oid`s.
pub(crate) fn pg_locks_ids(key: i64) -> (u32, u32) {
    let bits = key as u64;
    ((bits >> 32) as u32, bits as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_hkdf_of_the_name_read_little_endian() {
        // RFC 5869 machinery through the `hkdf` crate; the interop test
        // (`sqlx_and_guests_exclude_each_other_both_ways` in `tests/e2e/postgres.rs`) checks the same keys against sqlx
        // itself on a real server.
        let a = key_of("orders/42");
        assert_eq!(a, key_of("orders/42"));
        assert_ne!(a, key_of("orders/43"));
    }

    #[test]
    fn pg_locks_splits_the_key_into_high_and_low_halves() {
        let key = -2_i64; // 0xFFFF_FFFF_FFFF_FFFE
        assert_eq!(pg_locks_ids(key), (0xFFFF_FFFF, 0xFFFF_FFFE));
        let key = 0x0000_0001_0000_0002;
        assert_eq!(pg_locks_ids(key), (1, 2));
    }
}
