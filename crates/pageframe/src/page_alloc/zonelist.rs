//! Zonelists: per node, the zones to try in order. The fallback list walks
//! nodes by distance (find_next_best_node(), with its penalties and the
//! round-robin load among equally distant nodes), each node's zones highest
//! first; the no-fallback list (`__GFP_THISNODE`) holds only the node's own
//! zones. mirrors build_zonelists() and build_zonerefs_node().

use super::ZoneSlot;
use crate::machine::MachineLayout;
use crate::sync::LockFamily;
use crate::types::{ZoneIdx, ZoneType};

/// `PENALTY_FOR_NODE_WITH_CPUS`.
const PENALTY_FOR_NODE_WITH_CPUS: i64 = 1;

/// The zonelists of one node.
pub(crate) struct Zonelists {
    /// `ZONELIST_FALLBACK`: zone indices, best first.
    pub(crate) fallback: Box<[ZoneIdx]>,
    /// `ZONELIST_NOFALLBACK`: this node's zones only.
    pub(crate) this_node: Box<[ZoneIdx]>,
    /// First zone of each list an allocation with no nodemask may use, per
    /// highest zone type: `[fallback, this_node][highest_zone]`.
    first_eligible: [[Option<ZoneIdx>; ZoneType::COUNT]; 2],
}

impl Zonelists {
    /// Every zone index the lists hold.
    pub(crate) fn indices(&self) -> impl Iterator<Item = ZoneIdx> + '_ {
        let firsts = self.first_eligible.iter().flatten().flatten();
        self.fallback
            .iter()
            .chain(self.this_node.iter())
            .chain(firsts)
            .copied()
    }

    /// The zonelist an allocation walks: this node's zones alone for
    /// `__GFP_THISNODE`, else every node's in fallback order.
    #[inline(always)]
    pub(crate) fn for_request(&self, this_node: bool) -> &[ZoneIdx] {
        if this_node {
            &self.this_node
        } else {
            &self.fallback
        }
    }

    /// The preferred zone of an allocation without a nodemask.
    #[inline]
    pub(crate) fn first_eligible(
        &self,
        this_node: bool,
        highest_zone: ZoneType,
    ) -> Option<ZoneIdx> {
        self.first_eligible[this_node as usize][highest_zone.index()]
    }

    /// Builds every node's zonelists, in node order (the node_load[] state
    /// carries from one node to the next, as in the kernel).
    pub(crate) fn build_all<L: LockFamily>(
        layout: &MachineLayout,
        zones: &[ZoneSlot<L>],
    ) -> Box<[Zonelists]> {
        let nr_nodes = layout.nodes.len();
        let mut node_load = vec![0i64; nr_nodes];
        let node_zones = |node: usize| -> Vec<ZoneIdx> {
            let mut own: Vec<ZoneIdx> = zones
                .iter()
                .enumerate()
                .filter(|(_, zone)| zone.node.index() == node && zone.present_pages > 0)
                .map(|(index, _)| ZoneIdx(index as u16))
                .collect();
            own.sort_by_key(|&index| std::cmp::Reverse(zones[index.index()].zone_type));
            own
        };
        (0..nr_nodes)
            .map(|local| {
                let order = node_order(layout, local, &mut node_load);
                let fallback: Box<[ZoneIdx]> =
                    order.iter().flat_map(|&node| node_zones(node)).collect();
                let this_node = node_zones(local).into_boxed_slice();
                let first = |list: &[ZoneIdx], highest: ZoneType| {
                    list.iter()
                        .copied()
                        .find(|&zone| zones[zone.index()].zone_type <= highest)
                };
                let first_eligible = [&fallback, &this_node]
                    .map(|list| ZoneType::ALL.map(|highest| first(list, highest)));
                Zonelists {
                    fallback,
                    this_node,
                    first_eligible,
                }
            })
            .collect()
    }
}

/// The nodes in the order `local`'s fallback list visits them.
fn node_order(layout: &MachineLayout, local: usize, node_load: &mut [i64]) -> Vec<usize> {
    let nr_nodes = layout.nodes.len();
    let mut used = vec![false; nr_nodes];
    let mut order = Vec::with_capacity(nr_nodes);
    let mut prev = local;
    while let Some(node) = find_next_best_node(layout, local, &mut used, node_load) {
        if layout.distance[local][node] != layout.distance[local][prev] {
            node_load[node] += 1;
        }
        order.push(node);
        prev = node;
    }
    order
}

/// mirrors find_next_best_node().
fn find_next_best_node(
    layout: &MachineLayout,
    node: usize,
    used: &mut [bool],
    node_load: &[i64],
) -> Option<usize> {
    if !used[node] {
        used[node] = true;
        return Some(node);
    }
    let mut best: Option<(i64, usize)> = None;
    for candidate in 0..layout.nodes.len() {
        if used[candidate] {
            continue;
        }
        let mut value = layout.distance[node][candidate] as i64;
        value += (candidate < node) as i64;
        if !layout.nodes[candidate].cpus.is_empty() {
            value += PENALTY_FOR_NODE_WITH_CPUS;
        }
        value *= crate::types::MAX_NUMNODES as i64;
        value += node_load[candidate];
        if best.is_none_or(|(min, _)| value < min) {
            best = Some((value, candidate));
        }
    }
    let (_, chosen) = best?;
    used[chosen] = true;
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::MachineDesc;

    fn order_for(desc: &MachineDesc) -> Vec<Vec<usize>> {
        let layout = desc.layout().unwrap();
        let mut load = vec![0; layout.nodes.len()];
        (0..layout.nodes.len())
            .map(|node| node_order(&layout, node, &mut load))
            .collect()
    }

    #[test]
    fn nodes_ordered_by_distance() {
        let mut desc = MachineDesc::uniform(16 << 30, 4, 4).unwrap();
        desc.distances = Some(vec![
            vec![10, 20, 30, 40],
            vec![20, 10, 20, 30],
            vec![30, 20, 10, 20],
            vec![40, 30, 20, 10],
        ]);
        let orders = order_for(&desc);
        assert_eq!(orders[0], vec![0, 1, 2, 3]);
        assert_eq!(orders[3], vec![3, 2, 1, 0]);
        assert_eq!(orders[1][0], 1);
    }

    #[test]
    fn equal_distances_round_robin() {
        let desc = MachineDesc::uniform(16 << 30, 4, 4).unwrap();
        let orders = order_for(&desc);
        // Every node comes first for itself; the second choice spreads out.
        for (node, order) in orders.iter().enumerate() {
            assert_eq!(order[0], node);
            assert_eq!(order.len(), 4);
        }
        let seconds: std::collections::BTreeSet<usize> =
            orders.iter().map(|order| order[1]).collect();
        assert!(seconds.len() > 1, "second choices all equal: {orders:?}");
    }
}
