//! `wardlock-ticket`: the `wardlock` command line with the ticket engine
//! registered beside the built-in ones — `wardlock-ticket run --backend ticket
//! counter.wasm -- …` runs guests on it.

use wardlock::Registry;
use wardlock_ticket_engine::TicketEngine;

fn main() {
    wardlock::main(Registry::builtin().with(TicketEngine))
}
