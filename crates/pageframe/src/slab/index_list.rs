//! A doubly linked list threaded through values stored in [`IdSlots`]:
//! the nodes are slot ids and each value carries its own [`Links`], as the
//! kernel threads `struct list_head` through `struct slab` and
//! `struct zspage`. Used for the slab partial lists and zsmalloc's
//! fullness groups.
//!
//! Invariants (checked by [`IndexList::check`]): walking `next` from `head`
//! visits `len` live nodes and ends at `tail`; each node's `prev` names the
//! node before it; an empty list has `head == tail == NIL`; a node is on at
//! most one list, and a node on none has both links `NIL`.

use super::id_slots::IdSlots;

/// "No node".
pub const NIL: u32 = u32::MAX;

/// A node's links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Links {
    /// The node before, or `NIL`.
    pub prev: u32,
    /// The node after, or `NIL`.
    pub next: u32,
}

impl Links {
    /// The links of a node on no list.
    pub const UNLINKED: Links = Links {
        prev: NIL,
        next: NIL,
    };
}

/// A value that can be on an [`IndexList`].
pub trait Linked {
    /// The value's links.
    fn links(&self) -> &Links;
    /// The value's links, writable.
    fn links_mut(&mut self) -> &mut Links;
}

/// A list head: first and last node and the length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexList {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for IndexList {
    fn default() -> IndexList {
        IndexList::EMPTY
    }
}

fn node<T: Linked>(nodes: &mut IdSlots<T>, id: u32) -> &mut Links {
    nodes.get_mut(id).expect("listed node is live").links_mut()
}

impl IndexList {
    /// An empty list.
    pub const EMPTY: IndexList = IndexList {
        head: NIL,
        tail: NIL,
        len: 0,
    };

    /// The first node, or `NIL`.
    #[inline]
    pub fn head(&self) -> u32 {
        self.head
    }

    /// Nodes on the list.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Puts unlinked node `id` first (list_add()).
    pub fn push_front<T: Linked>(&mut self, nodes: &mut IdSlots<T>, id: u32) {
        *node(nodes, id) = Links {
            prev: NIL,
            next: self.head,
        };
        match self.head {
            NIL => self.tail = id,
            head => node(nodes, head).prev = id,
        }
        self.head = id;
        self.len += 1;
    }

    /// Puts unlinked node `id` last (list_add_tail()).
    pub fn push_back<T: Linked>(&mut self, nodes: &mut IdSlots<T>, id: u32) {
        *node(nodes, id) = Links {
            prev: self.tail,
            next: NIL,
        };
        match self.tail {
            NIL => self.head = id,
            tail => node(nodes, tail).next = id,
        }
        self.tail = id;
        self.len += 1;
    }

    /// Takes node `id`, which is on this list, off it (list_del()).
    pub fn remove<T: Linked>(&mut self, nodes: &mut IdSlots<T>, id: u32) {
        let Links { prev, next } = std::mem::replace(node(nodes, id), Links::UNLINKED);
        match prev {
            NIL => self.head = next,
            prev => node(nodes, prev).next = next,
        }
        match next {
            NIL => self.tail = prev,
            next => node(nodes, next).prev = prev,
        }
        self.len -= 1;
    }

    /// The nodes, first to last.
    pub fn ids<'a, T: Linked>(&self, nodes: &'a IdSlots<T>) -> impl Iterator<Item = u32> + 'a {
        let mut cursor = self.head;
        std::iter::from_fn(move || {
            let id = cursor;
            if id == NIL {
                return None;
            }
            cursor = nodes.get(id).map_or(NIL, |value| value.links().next);
            Some(id)
        })
    }

    /// Checks the module's invariants for this list; returns its nodes.
    pub fn check<T: Linked>(&self, nodes: &IdSlots<T>) -> Result<Vec<u32>, String> {
        let mut seen = Vec::new();
        let mut prev = NIL;
        let mut cursor = self.head;
        while cursor != NIL {
            if seen.len() > self.len as usize {
                return Err(format!("list longer than its length {}", self.len));
            }
            let links = nodes
                .get(cursor)
                .ok_or_else(|| format!("node {cursor} on a list is not live"))?
                .links();
            if links.prev != prev {
                return Err(format!("node {cursor}: prev {} != {prev}", links.prev));
            }
            seen.push(cursor);
            prev = cursor;
            cursor = links.next;
        }
        if seen.len() != self.len as usize || self.tail != prev {
            return Err(format!(
                "{} nodes listed, length {}, tail {} != {prev}",
                seen.len(),
                self.len,
                self.tail
            ));
        }
        Ok(seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Item(Links);
    impl Linked for Item {
        fn links(&self) -> &Links {
            &self.0
        }
        fn links_mut(&mut self) -> &mut Links {
            &mut self.0
        }
    }

    #[test]
    fn pushes_and_removals_keep_the_links_consistent() {
        let mut nodes = IdSlots::default();
        let ids: Vec<u32> = (0..5)
            .map(|_| nodes.insert(Item(Links::UNLINKED)))
            .collect();
        let mut list = IndexList::EMPTY;
        list.push_back(&mut nodes, ids[0]);
        list.push_front(&mut nodes, ids[1]);
        list.push_back(&mut nodes, ids[2]);
        list.push_front(&mut nodes, ids[3]);
        assert_eq!(list.ids(&nodes).collect::<Vec<_>>(), [3, 1, 0, 2]);
        list.remove(&mut nodes, ids[3]);
        list.remove(&mut nodes, ids[2]);
        list.remove(&mut nodes, ids[1]);
        assert_eq!(list.check(&nodes).unwrap(), [0]);
        assert_eq!(*nodes.get(ids[3]).unwrap().links(), Links::UNLINKED);
        list.remove(&mut nodes, ids[0]);
        assert_eq!(list.len(), 0);
        assert_eq!(list, IndexList::EMPTY);
    }
}
