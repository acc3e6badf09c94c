//! Loopback ports for the servers the tests start.
//!
//! A port is picked below the kernel's ephemeral range
//! (`net.ipv4.ip_local_port_range`, 32768–60999 by default), not by binding
//! port 0. Every outgoing connection takes its local port from the ephemeral
//! range, and the tests make thousands: a port that `bind(0)` handed out and
//! the test let go could be some connection's local port before the server
//! meant for it (a ZooKeeper JVM that takes seconds to start under load)
//! binds it. Below the range only another listener can take it.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::net::TcpListener;
use std::sync::{Mutex, PoisonError};

/// The lowest port handed out: above the ports of services a machine runs.
const LOWEST: u16 = 10_000;

/// A loopback port no one listens on now and that this process has not
/// handed out before (an ensemble picks its nine ports before it starts any
/// server). Ports are tried in a random order, so test processes picking at
/// once rarely try the same one; each is checked by binding it.
///
/// # Panics
/// When no port below the ephemeral range can be bound (then `bind(0)` is
/// the fallback, and its failure panics).
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    let highest = ephemeral_start().saturating_sub(1);
    if highest > LOWEST {
        let span = u64::from(highest - LOWEST) + 1;
        let random = RandomState::new();
        for attempt in 0..1_000u64 {
            let offset = random.hash_one(attempt) % span;
            let port = LOWEST + u16::try_from(offset).unwrap_or(0);
            if !handed_out.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
                handed_out.insert(port);
                return port;
            }
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let port = listener.local_addr().expect("local addr").port();
    handed_out.insert(port);
    port
}

/// The first port of the kernel's ephemeral range (32768 when it cannot be
/// read).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_and_never_handed_out_twice_and_bind() {
        let ports: Vec<u16> = (0..200).map(|_| free_port()).collect();
        let distinct: HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "a port was handed out twice");
        let bound: Vec<TcpListener> = ports
            .iter()
            .map(|&p| TcpListener::bind(("127.0.0.1", p)).expect("a handed-out port binds"))
            .collect();
        assert_eq!(bound.len(), ports.len());
        let start = ephemeral_start();
        assert!(
            ports.iter().all(|&p| (LOWEST..start).contains(&p)),
            "ports outside {LOWEST}..{start}: {ports:?}"
        );
    }
}
