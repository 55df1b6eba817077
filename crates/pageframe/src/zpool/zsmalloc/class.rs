//! zsmalloc size classes: their sizes, how many order-0 pages make one
//! zspage of each, which neighbouring classes merge, and where the huge
//! classes start. Pure functions of the page size and the chain size.

/// `ZS_HANDLE_SIZE`: bytes of handle stored in front of every object of a
/// non-huge class.
pub const ZS_HANDLE_SIZE: usize = 8;
/// `ZS_MIN_ALLOC_SIZE` on 64-bit machines.
pub const ZS_MIN_ALLOC_SIZE: usize = 32;
/// `CLASS_BITS`: the class delta is `PAGE_SIZE >> CLASS_BITS`.
pub const CLASS_BITS: u32 = 8;
/// The default `CONFIG_ZSMALLOC_CHAIN_SIZE`.
pub const DEFAULT_CHAIN_SIZE: u32 = 8;
/// `CONFIG_ZSMALLOC_CHAIN_SIZE` range.
pub const CHAIN_SIZE_RANGE: std::ops::RangeInclusive<u32> = 4..=16;

/// The geometry of every class of a pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassTable {
    /// Bytes per page.
    pub page_size: usize,
    /// `ZS_SIZE_CLASS_DELTA`.
    pub delta: usize,
    /// Per class index: (size, pages_per_zspage, objs_per_zspage, the index
    /// of the class it merged into — itself when it did not merge).
    pub classes: Vec<ClassGeometry>,
    /// `huge_class_size`: requests of this size or more (before the handle
    /// is added) land in a huge class.
    pub huge_class_size: usize,
}

/// One size class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassGeometry {
    /// Slot size (the request plus the handle, rounded up to the class).
    pub size: usize,
    /// Order-0 pages per zspage.
    pub pages_per_zspage: usize,
    /// Objects per zspage.
    pub objs_per_zspage: usize,
    /// The class that serves this size (a larger one when merged).
    pub merged_into: usize,
}

/// Pages per zspage that waste least, from 1 to `max_pages`; a power-of-two
/// size always takes one page. Mirrors calculate_zspage_chain_size().
pub fn calculate_zspage_chain_size(class_size: usize, page_size: usize, max_pages: usize) -> usize {
    if class_size.is_power_of_two() {
        return 1;
    }
    let mut chain_size = 1;
    let mut min_waste = usize::MAX;
    for pages in 1..=max_pages {
        let waste = (pages * page_size) % class_size;
        if waste < min_waste {
            min_waste = waste;
            chain_size = pages;
        }
    }
    chain_size
}

impl ClassTable {
    /// The classes of a pool with pages of `page_size` bytes and zspages of
    /// at most `chain_size` pages. Mirrors the class setup of
    /// zs_create_pool(): classes are built from the largest down, a class
    /// with the same pages and objects per zspage as the one above it merges
    /// into it (can_merge()), and the first class (from the top) that is not
    /// one-object-per-page sets `huge_class_size`.
    pub fn new(page_size: usize, chain_size: usize) -> ClassTable {
        let delta = page_size >> CLASS_BITS;
        let max_alloc = page_size;
        let nr_classes = (max_alloc - ZS_MIN_ALLOC_SIZE).div_ceil(delta) + 1;
        let mut classes = vec![
            ClassGeometry {
                size: 0,
                pages_per_zspage: 0,
                objs_per_zspage: 0,
                merged_into: 0,
            };
            nr_classes
        ];
        let mut huge_class_size = 0;
        let mut prev: Option<usize> = None;
        for index in (0..nr_classes).rev() {
            let size = (ZS_MIN_ALLOC_SIZE + index * delta).min(max_alloc);
            let pages = calculate_zspage_chain_size(size, page_size, chain_size);
            let objs = pages * page_size / size;
            if pages != 1 && objs != 1 && huge_class_size == 0 {
                // The handle is added before the class lookup, so a request
                // this much smaller still ends up huge.
                huge_class_size = size - (ZS_HANDLE_SIZE - 1);
            }
            if let Some(prev) = prev {
                let upper = classes[prev];
                if upper.pages_per_zspage == pages && upper.objs_per_zspage == objs {
                    classes[index] = ClassGeometry {
                        merged_into: prev,
                        ..upper
                    };
                    continue;
                }
            }
            classes[index] = ClassGeometry {
                size,
                pages_per_zspage: pages,
                objs_per_zspage: objs,
                merged_into: index,
            };
            prev = Some(index);
        }
        ClassTable {
            page_size,
            delta,
            classes,
            huge_class_size,
        }
    }

    /// The class index of a slot of `size` bytes (handle included); mirrors
    /// get_size_class_index().
    #[inline]
    pub fn size_class_index(&self, size: usize) -> usize {
        let index = if size > ZS_MIN_ALLOC_SIZE {
            // delta is a power of two: a shift, not a division.
            (size - ZS_MIN_ALLOC_SIZE + self.delta - 1) >> self.delta.trailing_zeros()
        } else {
            0
        };
        index.min(self.classes.len() - 1)
    }

    /// True when the class holds one object per one-page zspage.
    pub fn is_huge(&self, index: usize) -> bool {
        let class = &self.classes[index];
        class.pages_per_zspage == 1 && class.objs_per_zspage == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_size_picks_least_waste() {
        // 3/8 of a page fits 8 times in 3 pages.
        assert_eq!(calculate_zspage_chain_size(1536, 4096, 8), 3);
        assert_eq!(calculate_zspage_chain_size(2048, 4096, 8), 1);
        // The source document's 2064-byte class: 4 pages → 7 objects in 6.1
        // (chain 4); chain 8 finds a better fit.
        assert_eq!(calculate_zspage_chain_size(2064, 4096, 4), 4);
        assert_eq!(calculate_zspage_chain_size(2064, 4096, 8), 8);
    }

    #[test]
    fn table_has_255_classes_and_a_huge_threshold() {
        let table = ClassTable::new(4096, 8);
        assert_eq!(table.classes.len(), 255);
        assert_eq!(table.delta, 16);
        assert_eq!(table.classes[0].size, 32);
        assert_eq!(table.classes[254].size, 4096);
        assert!(table.is_huge(254));
        assert!(table.huge_class_size > 3000 && table.huge_class_size < 4096);
        // Every size maps to a class that holds it.
        for size in ZS_HANDLE_SIZE + 1..=4096 + ZS_HANDLE_SIZE {
            let index = table.size_class_index(size);
            let class = table.classes[table.classes[index].merged_into];
            assert!(class.size >= size.min(4096), "size {size}");
        }
        // Chain 16 moves the huge threshold up.
        let chain16 = ClassTable::new(4096, 16);
        assert!(chain16.huge_class_size >= table.huge_class_size);
    }
}
