//! Node bitmaps as the memory-policy system calls pass them: the kernel's
//! `nodemask_t` of the syscall ABI ([`UserNodemask`], `SYSCALL_MAX_NUMNODES`
//! bits), read from a user bitmap of `maxnode` bits (`get_nodes()`) and
//! written back to one (`copy_nodes_to_user()`).
//!
//! Owns: the width of the ABI nodemask and the two copy rules. A machine
//! never has more than [`MAX_NUMNODES`] nodes, so the bits between
//! `MAX_NUMNODES` and `SYSCALL_MAX_NUMNODES` name nodes that do not exist:
//! Linux accepts them and drops them when it intersects with the allowed
//! nodes, except where it keeps the user's mask as given (STATIC/RELATIVE).
//!
//! Invariant: no bit at or above `SYSCALL_MAX_NUMNODES` is ever set.

use crate::error::Errno;
use crate::types::{NodeId, Nodemask, MAX_NUMNODES};

/// `MAX_NUMNODES` of the kernel the calls model: `CONFIG_NODES_SHIFT=10`,
/// as distribution kernels for x86-64 are built.
pub const SYSCALL_MAX_NUMNODES: usize = 1024;

/// Bits of a user bitmap past which `get_nodes()` and
/// `copy_nodes_to_user()` give up: one page of bits (`PAGE_SIZE * 8`).
const USER_MASK_LIMIT_BITS: u64 = 4096 * 8;

/// Words of the ABI nodemask.
const WORDS: usize = SYSCALL_MAX_NUMNODES / 64;

/// A kernel `nodemask_t` of the syscall ABI (1024 bits).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct UserNodemask {
    words: [u64; WORDS],
}

impl UserNodemask {
    /// The empty mask.
    pub const NONE: UserNodemask = UserNodemask { words: [0; WORDS] };

    /// The mask of a machine's node set.
    pub fn from_nodemask(nodes: &Nodemask) -> UserNodemask {
        let mut mask = UserNodemask::NONE;
        for node in nodes.iter() {
            mask.set(node.index());
        }
        mask
    }

    /// The mask with exactly `bits` set (those below `SYSCALL_MAX_NUMNODES`).
    pub fn from_bits(bits: &[usize]) -> UserNodemask {
        let mut mask = UserNodemask::NONE;
        for bit in bits {
            mask.set(*bit);
        }
        mask
    }

    /// The nodes that can exist on a machine (bits below [`MAX_NUMNODES`]).
    pub fn to_nodemask(&self) -> Nodemask {
        let mut nodes = Nodemask::NONE;
        for bit in self.iter().filter(|bit| *bit < MAX_NUMNODES) {
            nodes.set(NodeId(bit as u16));
        }
        nodes
    }

    /// Sets bit `node` (ignored at or above `SYSCALL_MAX_NUMNODES`).
    pub fn set(&mut self, node: usize) {
        if node < SYSCALL_MAX_NUMNODES {
            self.words[node / 64] |= 1 << (node % 64);
        }
    }

    /// True when bit `node` is set.
    pub fn contains(&self, node: usize) -> bool {
        node < SYSCALL_MAX_NUMNODES && self.words[node / 64] >> (node % 64) & 1 != 0
    }

    /// True when no bit is set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|word| *word == 0)
    }

    /// Set bits, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..SYSCALL_MAX_NUMNODES).filter(|bit| self.contains(*bit))
    }

    /// The words of the mask.
    pub fn words(&self) -> &[u64; WORDS] {
        &self.words
    }
}

/// Reads a user bitmap of `maxnode` bits (mirrors get_nodes(), 6.12 and
/// live 6.18): the kernel reads `maxnode - 1` bits, in unsigned arithmetic,
/// so `maxnode = 0` with a bitmap wraps to a huge count and is EINVAL;
/// `maxnode = 1` or no bitmap reads nothing; more than a page of bits is
/// EINVAL. Past `SYSCALL_MAX_NUMNODES` bits the bitmap must be zero, and the
/// kernel checks that a whole word at a time from the top word down, so a
/// bit above `maxnode - 1` that shares the top word is EINVAL too (below
/// `SYSCALL_MAX_NUMNODES`, bits above `maxnode - 1` are masked off).
/// `mask` shorter than the words the kernel reads is the user-copy fault,
/// EFAULT.
pub fn get_nodes(mask: Option<&[u64]>, maxnode: u64) -> Result<UserNodemask, Errno> {
    let bits = maxnode.wrapping_sub(1);
    let mut nodes = UserNodemask::NONE;
    let Some(mask) = mask else {
        return Ok(nodes);
    };
    if bits == 0 {
        return Ok(nodes);
    }
    if bits > USER_MASK_LIMIT_BITS {
        return Err(Errno::EINVAL);
    }
    let words = bits.div_ceil(64) as usize;
    if mask.len() < words {
        return Err(Errno::EFAULT);
    }
    if words > WORDS && mask[WORDS..words].iter().any(|word| *word != 0) {
        return Err(Errno::EINVAL);
    }
    let read = (bits as usize).min(SYSCALL_MAX_NUMNODES);
    for bit in (0..read).filter(|bit| mask[bit / 64] >> (bit % 64) & 1 != 0) {
        nodes.set(bit);
    }
    Ok(nodes)
}

/// Writes `nodes` to a user bitmap of `maxnode` bits (mirrors
/// copy_nodes_to_user(), 6.12): the kernel copies `ALIGN(maxnode - 1, 64)`
/// bits (unsigned arithmetic again: `maxnode` 0 or 1 copies nothing) but
/// only the words of `nr_node_ids` nodes, zeroing the rest; more than a page
/// of bits is EINVAL. `mask` shorter than that is EFAULT.
pub fn copy_nodes_to_user(
    mask: &mut [u64],
    maxnode: u64,
    nodes: &UserNodemask,
    nr_node_ids: usize,
) -> Result<(), Errno> {
    let copy_bytes = (maxnode.wrapping_sub(1).wrapping_add(63) & !63) / 8;
    let node_bytes = (nr_node_ids.div_ceil(64) * 8) as u64;
    let mut copy_words = copy_bytes / 8;
    if copy_bytes > node_bytes {
        if copy_bytes > USER_MASK_LIMIT_BITS / 8 {
            return Err(Errno::EINVAL);
        }
        let total = copy_words as usize;
        if mask.len() < total {
            return Err(Errno::EFAULT);
        }
        mask[node_bytes as usize / 8..total].fill(0);
        copy_words = node_bytes / 8;
    }
    let copy_words = copy_words as usize;
    if mask.len() < copy_words {
        return Err(Errno::EFAULT);
    }
    for (index, word) in mask.iter_mut().take(copy_words).enumerate() {
        *word = nodes.words.get(index).copied().unwrap_or(0);
    }
    Ok(())
}

/// A nodemask as the words of a user bitmap (for the calls' arguments).
pub fn nodemask_words(nodes: &Nodemask) -> Vec<u64> {
    let mut words = vec![0u64; MAX_NUMNODES / 64];
    for node in nodes.iter() {
        words[node.index() / 64] |= 1 << (node.index() % 64);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_nodes_edges() {
        let mask = [1u64 | 1 << 1, 0, 0, 0, 1 << (300 - 256), 0, 0, 0];
        assert_eq!(get_nodes(Some(&mask), 0), Err(Errno::EINVAL));
        assert_eq!(get_nodes(None, 0), Ok(UserNodemask::NONE));
        assert_eq!(get_nodes(Some(&mask), 1), Ok(UserNodemask::NONE));
        let two = get_nodes(Some(&mask), 2).unwrap();
        assert_eq!(two.iter().collect::<Vec<_>>(), [0]);
        let wide = get_nodes(Some(&mask), 301 + 1).unwrap();
        assert_eq!(wide.iter().collect::<Vec<_>>(), [0, 1, 300]);
        assert_eq!(wide.to_nodemask().weight(), 2);
        let mut high = vec![0u64; 32];
        high[16] = 1;
        assert_eq!(get_nodes(Some(&high), 2000), Err(Errno::EINVAL));
        high[16] = 0;
        high[15] = 1 << 63;
        let top = get_nodes(Some(&high), 2000).unwrap();
        assert_eq!(top.iter().collect::<Vec<_>>(), [1023]);
        assert_eq!(get_nodes(Some(&[0]), 129), Err(Errno::EFAULT));
    }

    /// Regression: past `SYSCALL_MAX_NUMNODES` Linux checks whole words,
    /// so a bit above `maxnode - 1` in the top word is EINVAL (the live
    /// kernel: `migrate_pages(maxnode=2048, new={0,2047})` and
    /// `mbind(..., {1025}, maxnode=1026)` both fail), while below it such a
    /// bit is masked off.
    #[test]
    fn get_nodes_checks_whole_words_past_max_numnodes() {
        let mut mask = vec![0u64; 32];
        mask[31] = 1 << 63;
        mask[0] = 1;
        assert_eq!(get_nodes(Some(&mask), 2048), Err(Errno::EINVAL));
        mask[31] = 0;
        mask[16] = 1 << 1;
        assert_eq!(get_nodes(Some(&mask), 1026), Err(Errno::EINVAL));
        assert_eq!(
            get_nodes(Some(&mask), 1025),
            Ok(UserNodemask::from_bits(&[0]))
        );
        mask[16] = 0;
        mask[15] = 1 << 63;
        assert_eq!(
            get_nodes(Some(&mask), 1000),
            Ok(UserNodemask::from_bits(&[0]))
        );
        assert_eq!(
            get_nodes(Some(&mask), 1025),
            Ok(UserNodemask::from_bits(&[0, 1023]))
        );
    }

    #[test]
    fn copy_nodes_to_user_edges() {
        let mut nodes = UserNodemask::NONE;
        nodes.set(0);
        nodes.set(300);
        let mut out = [u64::MAX; 20];
        copy_nodes_to_user(&mut out, 0, &nodes, 1).unwrap();
        assert_eq!(out, [u64::MAX; 20]);
        copy_nodes_to_user(&mut out, 1025, &nodes, 1).unwrap();
        assert_eq!(out[0], 1);
        assert!(out[1..16].iter().all(|word| *word == 0));
        assert_eq!(out[16], u64::MAX);
        assert_eq!(
            copy_nodes_to_user(&mut out, 40000, &nodes, 1),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            copy_nodes_to_user(&mut out[..1], 200, &nodes, 1),
            Err(Errno::EFAULT)
        );
    }
}
