//! Slab geometry: the order a cache prefers, its minimum order, and how many
//! partial slabs it keeps. Pure functions of the object size and a few
//! boot parameters, so they can be tested against the kernel's numbers.

/// `MAX_OBJS_PER_PAGE`: objects per slab are counted in 15 bits.
pub const MAX_OBJS_PER_PAGE: u32 = 32767;
/// `MIN_PARTIAL`: the fewest empty-able partial slabs a node keeps.
pub const MIN_PARTIAL: u32 = 5;
/// `MAX_PARTIAL`: the most.
pub const MAX_PARTIAL: u32 = 10;
/// `slub_max_order` default: `PAGE_ALLOC_COSTLY_ORDER`.
pub const SLUB_MAX_ORDER: u8 = 3;

/// The largest `max_page_order` the slab takes: a machine's MAX_PAGE_ORDER
/// is at most this (`MachineDesc` refuses more), and a slab of 64 KiB pages
/// at this order still counts its bytes in 64 bits.
pub const MAX_SLAB_PAGE_ORDER: u8 = 20;

/// Boot parameters of the slab allocator (`slub_min_order=`,
/// `slub_max_order=`, `slub_min_objects=`) and the CPU count that
/// calculate_order() scales with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlabParams {
    /// `slub_min_order`, default 0.
    pub min_order: u8,
    /// `slub_max_order`, default 3 (`PAGE_ALLOC_COSTLY_ORDER`).
    pub max_order: u8,
    /// `slub_min_objects`; 0 (the default) derives it from `nr_cpus`.
    pub min_objects: u32,
    /// Present CPUs.
    pub nr_cpus: u32,
    /// The machine's MAX_PAGE_ORDER (inclusive).
    pub max_page_order: u8,
    /// Bytes per page.
    pub page_size: usize,
}

impl SlabParams {
    /// The kernel's defaults for a machine with `nr_cpus` CPUs and 4 KiB pages.
    pub fn new(nr_cpus: u32, page_size: usize) -> SlabParams {
        SlabParams {
            min_order: 0,
            max_order: SLUB_MAX_ORDER,
            min_objects: 0,
            nr_cpus,
            max_page_order: 10,
            page_size,
        }
    }

    /// The parameters as the slab uses them: `slub_max_order` and
    /// `slub_min_order` clamped to `max_page_order` (mirrors
    /// setup_slub_max_order() and setup_slub_min_order(), which clamp to
    /// MAX_PAGE_ORDER); a `max_page_order` above 20 (`MAX_SLAB_PAGE_ORDER`) is
    /// an error. A `min_order` above `max_order` stays: as in the kernel,
    /// the minimum wins.
    pub fn clamped(&self) -> Result<SlabParams, String> {
        if self.max_page_order > MAX_SLAB_PAGE_ORDER {
            return Err(format!(
                "max_page_order {} is above {MAX_SLAB_PAGE_ORDER}",
                self.max_page_order
            ));
        }
        Ok(SlabParams {
            max_order: self.max_order.min(self.max_page_order),
            min_order: self.min_order.min(self.max_page_order),
            ..*self
        })
    }

    /// Objects of `size` bytes (at least 1) in a slab of `order`
    /// (`order_objects()`), saturating at `u32::MAX`.
    pub fn order_objects(&self, order: u8, size: u32) -> u32 {
        let slab_bytes = (self.page_size as u64)
            .checked_shl(u32::from(order))
            .unwrap_or(u64::MAX);
        u32::try_from(slab_bytes / u64::from(size.max(1))).unwrap_or(u32::MAX)
    }
}

/// Smallest order whose block holds `bytes` (`get_order()`).
pub fn get_order(bytes: u64, page_size: usize) -> u8 {
    let pages = bytes.div_ceil(page_size.max(1) as u64).max(1);
    pages.next_power_of_two().trailing_zeros() as u8
}

/// Position of the highest set bit, 1-based; 0 for 0 (`fls()`).
fn fls(value: u32) -> u32 {
    32 - value.leading_zeros()
}

/// The smallest order from `get_order(min_objects * size)` up to
/// `max_order` that wastes at most `1/fract_leftover` of the slab; returns
/// `max_order + 1` when none does. Mirrors calc_slab_order().
fn calc_slab_order(
    params: &SlabParams,
    size: u32,
    min_objects: u32,
    max_order: u8,
    fract_leftover: u32,
) -> u8 {
    let min_order = params.min_order;
    if params.order_objects(min_order, size) > MAX_OBJS_PER_PAGE {
        return get_order(
            u64::from(size) * u64::from(MAX_OBJS_PER_PAGE),
            params.page_size,
        )
        .saturating_sub(1);
    }
    let start = min_order.max(get_order(
        u64::from(min_objects) * u64::from(size),
        params.page_size,
    ));
    let mut order = start;
    while order <= max_order {
        let slab_size = (params.page_size as u64) << order;
        let rem = slab_size % u64::from(size);
        if rem <= slab_size / u64::from(fract_leftover) {
            break;
        }
        order += 1;
    }
    order
}

/// The order a cache of `size`-byte objects prefers; `None` when no order up
/// to MAX_PAGE_ORDER fits one object (or `size` is 0, or the parameters
/// fail [`SlabParams::clamped`]). Mirrors calculate_order(): first
/// accept more waste (1/16, 1/8, 1/4 of the slab), then fewer objects per
/// slab, then a single object, then orders above `slub_max_order`.
pub fn calculate_order(params: &SlabParams, size: u32) -> Option<u8> {
    let Ok(clamped) = params.clamped() else {
        return None;
    };
    let params = &clamped;
    if size == 0 {
        return None;
    }
    let mut min_objects = params.min_objects;
    if min_objects == 0 {
        min_objects = 4 * (fls(params.nr_cpus.max(1)) + 1);
    }
    let max_objects = params.order_objects(params.max_order, size);
    min_objects = min_objects.min(max_objects);

    while min_objects > 1 {
        let mut fraction = 16;
        while fraction >= 4 {
            let order = calc_slab_order(params, size, min_objects, params.max_order, fraction);
            if order <= params.max_order {
                return Some(order);
            }
            fraction /= 2;
        }
        min_objects -= 1;
    }

    let order = calc_slab_order(params, size, 1, params.max_order, 1);
    if order <= params.max_order {
        return Some(order);
    }
    // The kernel's MAX_ORDER was exclusive; ours is inclusive.
    let order = calc_slab_order(params, size, 1, params.max_page_order, 1);
    (order <= params.max_page_order).then_some(order)
}

/// Partial slabs a node keeps before it frees empty ones: `ilog2(size) / 2`
/// clamped to `[MIN_PARTIAL, MAX_PARTIAL]` (set_min_partial()).
pub fn min_partial(size: u32) -> u32 {
    let ilog2 = 31 - size.max(1).leading_zeros();
    (ilog2 / 2).clamp(MIN_PARTIAL, MAX_PARTIAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_past_what_a_shift_holds_are_clamped_or_refused_not_overflowed() {
        // Regression: max_order 255 or max_page_order 64 overflowed the
        // `page_size << order` shifts (a panic with overflow checks, a
        // wrapped geometry in release), and the order loop could wrap.
        let base = SlabParams::new(2, 4096);
        for wide in [
            SlabParams {
                max_order: 255,
                ..base
            },
            SlabParams {
                min_order: 255,
                ..base
            },
        ] {
            let clamped = wide.clamped().unwrap();
            assert!(clamped.max_order <= 10 && clamped.min_order <= 10);
            assert!(calculate_order(&wide, 64).is_some_and(|order| order <= 10));
        }
        for bad in [
            SlabParams {
                max_page_order: 64,
                max_order: 64,
                ..base
            },
            SlabParams {
                max_page_order: 21,
                ..base
            },
        ] {
            assert!(bad.clamped().is_err(), "{bad:?}");
            assert_eq!(calculate_order(&bad, 64), None, "{bad:?}");
        }
        assert_eq!(calculate_order(&base, 0), None);
        let widest = SlabParams {
            max_page_order: MAX_SLAB_PAGE_ORDER,
            max_order: MAX_SLAB_PAGE_ORDER,
            page_size: 1 << 16,
            ..base
        };
        assert_eq!(widest.clamped(), Ok(widest));
        assert_eq!(widest.order_objects(MAX_SLAB_PAGE_ORDER, 1), u32::MAX);
        assert_eq!(get_order(1 << 20, 0), 20);
    }

    /// Orders of the kmalloc caches on a 4 KiB machine with 64 CPUs
    /// (min_objects 32: kmalloc-192 gets order 1, 42 objects per slab, as
    /// /proc/slabinfo shows on such boxes) and with 2 CPUs.
    #[test]
    fn kmalloc_orders_match_the_kernel() {
        let sizes = [
            8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
        ];
        let big = SlabParams::new(64, 4096);
        let orders: Vec<u8> = sizes
            .iter()
            .map(|size| calculate_order(&big, *size).unwrap())
            .collect();
        assert_eq!(orders, [0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 3, 3, 3]);
        let small = SlabParams::new(2, 4096);
        let orders: Vec<u8> = sizes
            .iter()
            .map(|size| calculate_order(&small, *size).unwrap())
            .collect();
        // min_objects = 4 * (fls(2) + 1) = 12.
        assert_eq!(orders, [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3]);
    }

    #[test]
    fn min_partial_is_clamped() {
        assert_eq!(min_partial(8), 5);
        assert_eq!(min_partial(4096), 6);
        assert_eq!(min_partial(1 << 30), 10);
    }

    #[test]
    fn get_order_rounds_up() {
        assert_eq!(get_order(1, 4096), 0);
        assert_eq!(get_order(4096, 4096), 0);
        assert_eq!(get_order(4097, 4096), 1);
        assert_eq!(get_order(8192 * 3, 4096), 3);
    }
}
