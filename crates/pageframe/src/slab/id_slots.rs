//! Numbered slots with freed-id reuse and per-slot generations: the one
//! home of the "vector of `Option`s plus a stack of freed ids" pattern that
//! slab ids, zspage ids and the zpool handle tables share.
//!
//! Owns: the values, one per live id, and per slot a 32-bit generation that
//! grows by one each time the slot is freed. A [`Handle`] packs
//! `generation << 32 | (id + 1)`: it names one life of one slot, so a freed
//! handle stays invalid until its slot has been reused 2^32 times (a zero
//! handle is never valid).
//!
//! Invariants: `free` holds exactly the ids of the empty slots, each once;
//! `live == number of occupied slots`.

/// A handle: `generation << 32 | (id + 1)`.
pub type Handle = u64;

/// One slot: its generation and its value while live.
#[derive(Clone, Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Values in numbered slots; see the module documentation.
#[derive(Clone, Debug)]
pub struct IdSlots<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for IdSlots<T> {
    fn default() -> IdSlots<T> {
        IdSlots {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> IdSlots<T> {
    /// Stores `value` in the most recently freed slot, or a new one; returns
    /// its id.
    pub fn insert(&mut self, value: T) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize].value = Some(value);
                id
            }
            None => {
                self.slots.push(Slot {
                    generation: 1,
                    value: Some(value),
                });
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Takes the value out of slot `id` and frees the slot (its generation
    /// moves on); `None` when the slot is empty or does not exist.
    pub fn remove(&mut self, id: u32) -> Option<T> {
        let slot = self.slots.get_mut(id as usize)?;
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(id);
        self.live -= 1;
        Some(value)
    }

    /// The value in slot `id`.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&T> {
        self.slots.get(id as usize)?.value.as_ref()
    }

    /// The value in slot `id`, writable.
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        self.slots.get_mut(id as usize)?.value.as_mut()
    }

    /// The handle naming the current life of slot `id` (its next life
    /// while it is free).
    pub fn handle(&self, id: u32) -> Handle {
        (u64::from(self.slots[id as usize].generation) << 32) | (u64::from(id) + 1)
    }

    /// The handle the next [`IdSlots::insert`] will be named by.
    pub fn next_handle(&self) -> Handle {
        match self.free.last() {
            Some(id) => self.handle(*id),
            None => 1 << 32 | (self.slots.len() as u64 + 1),
        }
    }

    /// The id a handle names, if it names a live slot's current life.
    #[inline]
    pub fn id_of(&self, handle: Handle) -> Option<u32> {
        let id = u32::try_from(handle & u64::from(u32::MAX))
            .ok()?
            .checked_sub(1)?;
        let slot = self.slots.get(id as usize)?;
        (slot.value.is_some() && u64::from(slot.generation) == handle >> 32).then_some(id)
    }

    /// Live values.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Live `(id, value)` pairs in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, slot)| slot.value.as_ref().map(|value| (id as u32, value)))
    }

    /// Takes every live value out, in id order; every slot is freed.
    pub fn drain(&mut self) -> Vec<T> {
        let mut values = Vec::with_capacity(self.live);
        for id in 0..self.slots.len() as u32 {
            if let Some(value) = self.remove(id) {
                values.push(value);
            }
        }
        values
    }

    /// Checks the module's invariants.
    pub fn check(&self) -> Result<(), String> {
        let empty = self
            .slots
            .iter()
            .filter(|slot| slot.value.is_none())
            .count();
        let mut free = self.free.clone();
        free.sort_unstable();
        free.dedup();
        if free.len() != self.free.len() || free.len() != empty {
            return Err(format!(
                "{} free ids for {empty} empty slots",
                self.free.len()
            ));
        }
        if free
            .iter()
            .any(|id| self.slots[*id as usize].value.is_some())
        {
            return Err("a live slot is on the free list".into());
        }
        if self.live + empty != self.slots.len() {
            return Err(format!("{} live of {} slots", self.live, self.slots.len()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_handles_stay_invalid_across_reuse() {
        let mut slots = IdSlots::default();
        let predicted = slots.next_handle();
        let first = slots.insert("a");
        let handle = slots.handle(first);
        assert_eq!(handle, predicted);
        assert_eq!(slots.id_of(handle), Some(first));
        assert_eq!(slots.remove(first), Some("a"));
        assert_eq!(slots.remove(first), None);
        for _ in 0..100_000 {
            let predicted = slots.next_handle();
            let id = slots.insert("b");
            assert_eq!(slots.handle(id), predicted);
            assert_eq!(id, first, "the freed id is reused");
            assert_eq!(slots.id_of(handle), None);
            slots.remove(id);
        }
        assert_eq!(slots.id_of(0), None);
        assert_eq!(slots.id_of(u64::MAX), None);
        slots.check().unwrap();
        assert_eq!(slots.len(), 0);
    }
}
