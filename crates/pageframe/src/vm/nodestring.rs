//! Node strings as libnuma's `numa_parse_nodestring()` reads them, and back.
//!
//! Grammar: `all` | `[!][+]list`, where list is comma-separated items,
//! each `N` or `N-M`. `!` inverts the result against the allowed nodes
//! ("all but"); `+` makes every number an index into the allowed nodes
//! rather than a node number ("relative"). Every node named must be allowed
//! (a node with memory the caller may use); the result must not be empty.
//! Errors name the offending part of the string and leave nothing behind.

use crate::types::{NodeId, Nodemask, MAX_NUMNODES};
use std::fmt;

/// A node string that cannot be parsed; displays as one line naming the part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodestringError {
    /// The whole string.
    pub text: String,
    /// The offending part of it.
    pub part: String,
    /// What is wrong with that part.
    pub reason: &'static str,
}

impl fmt::Display for NodestringError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "node string '{}': '{}' {}",
            self.text, self.part, self.reason
        )
    }
}

impl std::error::Error for NodestringError {}

/// Parses `text` against the `allowed` nodes (mirrors libnuma's
/// numa_parse_nodestring()).
pub fn parse_nodestring(text: &str, allowed: &Nodemask) -> Result<Nodemask, NodestringError> {
    let error = |part: &str, reason| NodestringError {
        text: text.to_string(),
        part: part.to_string(),
        reason,
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(error(text, "is empty"));
    }
    if trimmed == "all" {
        return if allowed.is_empty() {
            Err(error(trimmed, "selects no node"))
        } else {
            Ok(*allowed)
        };
    }
    let mut rest = trimmed;
    let invert = rest.starts_with('!');
    if invert {
        rest = &rest[1..];
    }
    let relative = rest.starts_with('+');
    if relative {
        rest = &rest[1..];
    }
    if rest.is_empty() {
        return Err(error(trimmed, "has no node list"));
    }
    let allowed_nodes: Vec<NodeId> = allowed.iter().collect();
    let resolve = |part: &str, number: &str| -> Result<NodeId, NodestringError> {
        if number.is_empty() || !number.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(error(part, "is not a node number"));
        }
        let value: usize = number.parse().map_err(|_| error(part, "is out of range"))?;
        let node = if relative {
            *allowed_nodes
                .get(value)
                .ok_or_else(|| error(part, "is beyond the allowed nodes (relative)"))?
        } else {
            if value >= MAX_NUMNODES {
                return Err(error(part, "is out of range"));
            }
            NodeId(value as u16)
        };
        if !allowed.contains(node) {
            return Err(error(part, "is not an allowed node with memory"));
        }
        Ok(node)
    };
    let mut mask = Nodemask::NONE;
    for item in rest.split(',') {
        if item.is_empty() {
            return Err(error(rest, "has an empty item"));
        }
        match item.split_once('-') {
            None => mask.set(resolve(item, item)?),
            Some((low, high)) => {
                let first = resolve(item, low)?;
                let last = resolve(item, high)?;
                if last < first {
                    return Err(error(item, "is a range that runs backwards"));
                }
                if relative {
                    let (first, last) = (
                        allowed_nodes
                            .iter()
                            .position(|node| *node == first)
                            .unwrap_or(0),
                        allowed_nodes
                            .iter()
                            .position(|node| *node == last)
                            .unwrap_or(0),
                    );
                    for node in &allowed_nodes[first..=last] {
                        mask.set(*node);
                    }
                } else {
                    for node in first.0..=last.0 {
                        let node = NodeId(node);
                        if allowed.contains(node) {
                            mask.set(node);
                        }
                    }
                }
            }
        }
    }
    if invert {
        let mut inverted = Nodemask::NONE;
        for node in allowed.iter().filter(|node| !mask.contains(*node)) {
            inverted.set(node);
        }
        mask = inverted;
    }
    if mask.is_empty() {
        return Err(error(trimmed, "selects no node"));
    }
    Ok(mask)
}

/// A mask as the shortest node string: ranges where nodes are consecutive
/// (`0-3,5`); `""` for the empty mask.
pub fn format_nodestring(mask: &Nodemask) -> String {
    let nodes: Vec<u16> = mask.iter().map(|node| node.0).collect();
    let mut parts = Vec::new();
    let mut index = 0;
    while index < nodes.len() {
        let start = nodes[index];
        let mut end = start;
        while index + 1 < nodes.len() && nodes[index + 1] == end + 1 {
            index += 1;
            end = nodes[index];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        index += 1;
    }
    parts.join(",")
}
