//! The zram device's invariants as code (see the module header of `zram`).

use super::{Slot, Zpool, Zram};
use crate::error::InvariantError;

impl<'a, P: Zpool + ?Sized + 'a> Zram<'a, P> {
    /// Checks the invariants in the module header.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        self.pool.check_invariants()?;
        let (mut stored, mut same, mut huge, mut bytes) = (0u64, 0u64, 0u64, 0u64);
        for (index, slot) in self.table.iter().enumerate() {
            if self.stored.is_set(index) == matches!(slot, Slot::Empty) {
                return Err(InvariantError(format!(
                    "zram: slot {index} is {slot:?} but the stored index says {}",
                    self.stored.is_set(index)
                )));
            }
            match slot {
                Slot::Empty => {}
                Slot::Same(_) => same += 1,
                Slot::Stored {
                    size,
                    huge: is_huge,
                    ..
                } => {
                    stored += 1;
                    bytes += u64::from(*size);
                    huge += u64::from(*is_huge);
                }
            }
        }
        if !self.stored.summary_agrees() {
            return Err(InvariantError(
                "zram: the stored index's summary disagrees with its bits".into(),
            ));
        }
        let stats = &self.stats;
        let objects = self.pool.stats().objects;
        if stats.pages_stored != same + stored
            || stats.same_pages != same
            || stats.huge_pages != huge
            || stats.compr_data_size != bytes
            || objects != stored
        {
            return Err(InvariantError(format!(
                "zram: pages_stored {} same {} huge {} compr {} objects {objects}; table: same {same} stored {stored} huge {huge} bytes {bytes}",
                stats.pages_stored, stats.same_pages, stats.huge_pages, stats.compr_data_size
            )));
        }
        Ok(())
    }
}
