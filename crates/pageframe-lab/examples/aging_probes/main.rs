//! Probes of the mechanisms that might age a machine worse than random
//! placement for a direct-mapped memory-side cache (issue: shuffle-cache's
//! `aged` row stays near random placement, the document saw 21%).
//!
//! - `orders`: the allocation orders of current Linux (THP heap,
//!   readahead's large folios, the buddy's split and merge order);
//! - `mm`: through the reclaim layer, several CPUs pre-touching the heap,
//!   a file read during the pre-touch, a resident hot file, a generational
//!   heap and the cache's set mapping;
//! - `placements`: hand-made placements (contiguous, page-random,
//!   block-random) of hashed and generational heaps;
//! - `live`: the host's own kernel aged by the same workload, its heap's
//!   frames read from pagemap (root; see `live.rs` for what it changes).
//!
//! `cargo run --release -p pageframe-lab --example aging_probes -- [orders|mm|placements|live] [seed] [probe|runs]`
//! (no family: `orders`; `mm` with a probe number runs that probe only;
//! `live` runs 20 benchmark runs unless given a count).

mod live;
mod mm_probes;
mod orders;
mod placements;

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    // A leading number is the seed of the order probes (the earlier
    // command line, `aging_probes -- [seed]`).
    let family = match args.peek() {
        Some(arg) if arg.parse::<u64>().is_err() => args.next().unwrap_or_default(),
        _ => "orders".into(),
    };
    let seed: u64 = args.next().and_then(|arg| arg.parse().ok()).unwrap_or(42);
    let only: Option<usize> = args.next().and_then(|arg| arg.parse().ok());
    match family.as_str() {
        "orders" => orders::run(seed),
        "mm" => {
            for (at, probe) in mm_probes::probes().into_iter().enumerate() {
                if only.is_some_and(|only| only != at) {
                    continue;
                }
                for shuffle in [false, true] {
                    mm_probes::run(probe, shuffle, seed);
                }
            }
        }
        "placements" => placements::run(seed),
        "live" => live::run(seed, only.map_or(20, |runs| runs as u64)),
        other => eprintln!("unknown probe family {other}: orders, mm, placements or live"),
    }
}
