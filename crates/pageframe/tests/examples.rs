//! Runs each library example's `main`, so that an example that stops
//! working (or whose assertions stop holding) fails the test suite.

#[path = "../examples/guest_memory_pool.rs"]
mod guest_memory_pool;
#[path = "../examples/secret_pool.rs"]
mod secret_pool;
#[path = "../examples/zram.rs"]
mod zram;
#[path = "../examples/zram_arena.rs"]
mod zram_arena;

#[test]
fn guest_memory_pool_runs() {
    guest_memory_pool::main().unwrap();
}

#[test]
fn secret_pool_runs() {
    secret_pool::main().unwrap();
}

#[test]
fn zram_runs() {
    zram::main().unwrap();
}

#[test]
fn zram_arena_runs() {
    zram_arena::main().unwrap();
}
