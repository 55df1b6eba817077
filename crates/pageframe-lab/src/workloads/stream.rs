//! A STREAM-like bandwidth kernel: three arrays `a`, `b`, `c` and the four
//! kernels copy (`c = a`), scale (`b = s*c`), add (`c = a + b`) and triad
//! (`a = b + s*c`), one cache line at a time. Several instances run
//! interleaved line by line, as concurrent processes share a memory-side
//! cache.

use super::FirstTouchSpace;
use crate::cache_model::DirectMappedCache;
use pageframe::LocalPageAllocator;

/// One instance: its arrays live in one first-touch space, `a` then `b`
/// then `c`, each `array_bytes` long.
pub struct StreamInstance {
    /// The instance's memory.
    pub space: FirstTouchSpace,
    array_bytes: u64,
}

/// (sources, destination) arrays of each kernel: copy, scale, add, triad.
const KERNELS: [(&[usize], usize); 4] = [(&[0], 2), (&[2], 1), (&[0, 1], 2), (&[1, 2], 0)];

impl StreamInstance {
    /// An instance whose three arrays total `bytes` in `space`.
    pub fn new(space: FirstTouchSpace) -> StreamInstance {
        let array_bytes = space.bytes() / 3 / 64 * 64;
        StreamInstance { space, array_bytes }
    }

    /// Touches the arrays in order (STREAM's initialisation loop).
    pub fn init(&mut self, allocator: &LocalPageAllocator) -> Result<(), String> {
        self.space.touch_all(allocator)
    }
}

/// Runs `passes` passes of the four kernels over every instance, line by
/// line and instance by instance, on `cache`. The instances must be
/// initialised (every page touched).
pub fn run_interleaved(
    instances: &[StreamInstance],
    cache: &mut DirectMappedCache,
    passes: u32,
    line: u64,
) {
    let lines = instances
        .iter()
        .map(|instance| instance.array_bytes / line)
        .min()
        .unwrap_or(0);
    for _ in 0..passes {
        for (sources, destination) in KERNELS {
            for at in 0..lines {
                let offset = at * line;
                for instance in instances {
                    let base = |array: usize| array as u64 * instance.array_bytes + offset;
                    for &source in sources {
                        cache.access(instance.space.phys_touched(base(source)));
                    }
                    cache.access(instance.space.phys_touched(base(destination)));
                }
            }
        }
    }
}
