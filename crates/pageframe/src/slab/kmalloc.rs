//! The kmalloc size classes: powers of two from 8 to 8192 plus 96 and 192,
//! as create_kmalloc_caches() makes them on a 4 KiB-page SLUB kernel.

/// Sizes of the kmalloc caches, in creation order.
pub const KMALLOC_SIZES: [u32; 13] = [
    8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
];

/// `KMALLOC_MAX_CACHE_SIZE` (two pages for SLUB): larger requests go to the
/// page allocator.
pub const KMALLOC_MAX_CACHE_SIZE: usize = 8192;

/// Index into [`KMALLOC_SIZES`] of the cache a `size`-byte request uses;
/// `None` above `KMALLOC_MAX_CACHE_SIZE`. Mirrors kmalloc_index(): 65..=96
/// goes to kmalloc-96 and 129..=192 to kmalloc-192.
pub fn kmalloc_index(size: usize) -> Option<usize> {
    if size == 0 || size > KMALLOC_MAX_CACHE_SIZE {
        return None;
    }
    KMALLOC_SIZES
        .iter()
        .position(|class| size <= *class as usize)
}

/// The kernel's name of a kmalloc cache: `kmalloc-96`, `kmalloc-1k`.
pub fn kmalloc_cache_name(size: u32) -> String {
    if size >= 1024 && size % 1024 == 0 {
        format!("kmalloc-{}k", size / 1024)
    } else {
        format!("kmalloc-{size}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_map_like_the_kernel() {
        let pick = |size| kmalloc_index(size).map(|index| KMALLOC_SIZES[index]);
        assert_eq!(pick(1), Some(8));
        assert_eq!(pick(65), Some(96));
        assert_eq!(pick(97), Some(128));
        assert_eq!(pick(129), Some(192));
        assert_eq!(pick(193), Some(256));
        assert_eq!(pick(8192), Some(8192));
        assert_eq!(pick(8193), None);
        assert_eq!(kmalloc_cache_name(2048), "kmalloc-2k");
        assert_eq!(kmalloc_cache_name(192), "kmalloc-192");
    }
}
