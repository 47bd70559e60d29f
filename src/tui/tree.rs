//! Timelines as a tree of branches, drawn like `tree` or `git log --graph`: each parallel
//! timeline under the one it branched from.
//!
//! ```text
//! Primary
//! ├─ Tesla 1889
//! │  └─ Tesla stays
//! └─ Moon 1969
//! ```

use std::collections::HashMap;

use crate::model::TimelineId;
use crate::service::TimelineInfo;

/// The connector before a child that has siblings after it.
const TEE: &str = "├─ ";
/// The connector before the last child.
const ELBOW: &str = "└─ ";
/// Under a child that has siblings after it: the line goes on down.
const PIPE: &str = "│  ";
/// Under the last child: nothing more at this depth.
const GAP: &str = "   ";
/// Before a child deeper than [`MAX_DEPTH`]: drawn at that depth, marked as deeper.
const DEEPER: &str = "…─ ";
/// Levels of indentation drawn; deeper branches stay at this one, so a long chain of
/// branches neither runs off the screen nor makes prefixes of quadratic total length.
pub const MAX_DEPTH: usize = 12;

/// The order to show `timelines` in, as a tree: each entry is an index into `timelines` and
/// the prefix to draw before its name (empty for a root).
///
/// A timeline whose parent is not in `timelines` (deleted, or filtered out) is a root, as is
/// one caught in a parent cycle, so every timeline appears exactly once. Siblings, and roots,
/// are in creation order (`primary` first, then `created_at`, then id): the same order
/// whatever order they are given in.
pub fn tree_order(timelines: &[TimelineInfo]) -> Vec<(usize, String)> {
    let refs: Vec<&TimelineInfo> = timelines.iter().collect();
    tree_order_of(&refs)
}

/// [`tree_order`] of borrowed timelines (a filtered subset, say), indexing `timelines`.
pub fn tree_order_of(timelines: &[&TimelineInfo]) -> Vec<(usize, String)> {
    let index: HashMap<&TimelineId, usize> = timelines
        .iter()
        .enumerate()
        .map(|(i, t)| (&t.id, i))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); timelines.len()];
    let mut roots = Vec::new();
    for (i, t) in timelines.iter().enumerate() {
        match t.parent.as_ref().and_then(|p| index.get(p)) {
            Some(&parent) if parent != i => children[parent].push(i),
            _ => roots.push(i),
        }
    }
    let key = |&i: &usize| {
        let t = timelines[i];
        (!t.id.is_primary(), t.created_at, t.id.as_str())
    };
    roots.sort_by_key(key);
    for list in &mut children {
        list.sort_by_key(key);
    }
    let mut order = Vec::with_capacity(timelines.len());
    let mut seen = vec![false; timelines.len()];
    // A parent cycle has no root: what the walk from the roots did not reach starts its own.
    let mut rest: Vec<usize> = (0..timelines.len()).collect();
    rest.sort_by_key(key);
    for start in roots.into_iter().chain(rest) {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        // Depth first without recursion (a chain of branches can be deep): each entry is a
        // node, the prefix of its row, and the prefix its children's rows start with.
        let mut stack = vec![(start, String::new(), String::new(), 0)];
        while let Some((node, row, under, depth)) = stack.pop() {
            order.push((node, row));
            let kids: Vec<usize> = children[node]
                .iter()
                .copied()
                .filter(|&k| !seen[k])
                .collect();
            let last = kids.len().saturating_sub(1);
            // Pushed in reverse so the first child is walked first.
            for (n, &kid) in kids.iter().enumerate().rev() {
                seen[kid] = true;
                let (connector, below) = if n == last { (ELBOW, GAP) } else { (TEE, PIPE) };
                if depth >= MAX_DEPTH {
                    stack.push((kid, format!("{under}{DEEPER}"), under.clone(), depth));
                } else {
                    let next = (format!("{under}{connector}"), format!("{under}{below}"));
                    stack.push((kid, next.0, next.1, depth + 1));
                }
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Duration, Utc};

    use super::*;
    use crate::model::Window;

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_795_000_000, 0).unwrap_or_default()
            + Duration::minutes(minute)
    }

    fn id(n: u128) -> TimelineId {
        if n == 0 {
            TimelineId::primary()
        } else {
            TimelineId::from_ulid(ulid::Ulid::from(n))
        }
    }

    /// Timeline `n`, named `name`, created at minute `n`, branched from `parent`.
    fn tl(n: u128, name: &str, parent: Option<u128>) -> TimelineInfo {
        TimelineInfo {
            window: Window::Seconds(3600),
            parent: parent.map(id),
            ..TimelineInfo::bare(id(n), name, at(n as i64))
        }
    }

    /// The tree as text, one `prefix + name` per line.
    fn drawn(timelines: &[TimelineInfo]) -> Vec<String> {
        tree_order(timelines)
            .into_iter()
            .map(|(i, prefix)| format!("{prefix}{}", timelines[i].name))
            .collect()
    }

    #[test]
    fn branches_hang_under_their_parent_with_connectors() {
        let list = vec![
            tl(0, "Primary", None),
            tl(1, "Tesla 1889", Some(0)),
            tl(2, "Tesla stays", Some(1)),
            tl(3, "Moon 1969", Some(0)),
            tl(4, "Tesla leaves", Some(1)),
            tl(5, "Stays, rich", Some(2)),
        ];
        assert_eq!(
            drawn(&list),
            [
                "Primary",
                "├─ Tesla 1889",
                "│  ├─ Tesla stays",
                "│  │  └─ Stays, rich",
                "│  └─ Tesla leaves",
                "└─ Moon 1969",
            ]
        );
    }

    #[test]
    fn the_order_is_creation_order_whatever_the_input_order() {
        let mut list = vec![
            tl(0, "Primary", None),
            tl(1, "b first", Some(0)),
            tl(2, "a second", Some(0)),
            tl(3, "child of first", Some(1)),
        ];
        let expected = drawn(&list);
        list.reverse();
        assert_eq!(drawn(&list), expected);
        assert_eq!(expected[1], "├─ b first");
        assert_eq!(expected[3], "└─ a second");
    }

    #[test]
    fn orphans_are_roots_after_primary() {
        // Timeline 1's parent (9) was deleted, or filtered out; 3's parent is 1.
        let list = vec![
            tl(3, "grandchild", Some(1)),
            tl(1, "orphan", Some(9)),
            tl(0, "Primary", None),
            tl(2, "branch", Some(0)),
        ];
        assert_eq!(
            drawn(&list),
            ["Primary", "└─ branch", "orphan", "└─ grandchild"]
        );
    }

    #[test]
    fn every_timeline_appears_once_even_in_a_parent_cycle() {
        let list = vec![
            tl(0, "Primary", None),
            tl(1, "a", Some(2)),
            tl(2, "b", Some(1)),
            tl(3, "self", Some(3)),
        ];
        let order = tree_order(&list);
        let mut seen: Vec<usize> = order.iter().map(|(i, _)| *i).collect();
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3]);
        assert_eq!(drawn(&list), ["Primary", "self", "a", "└─ b"]);
    }

    #[test]
    fn a_deep_chain_stays_bounded_and_in_order() {
        let n = 2_000u128;
        let list: Vec<TimelineInfo> = (0..n)
            .map(|i| tl(i, &format!("t{i}"), i.checked_sub(1)))
            .collect();
        let order = tree_order(&list);
        assert_eq!(order.len(), n as usize);
        assert!(order.iter().enumerate().all(|(row, (i, _))| row == *i));
        assert_eq!(order[1].1, "└─ ");
        assert_eq!(order[2].1, "   └─ ");
        let widest = order.iter().map(|(_, p)| p.chars().count()).max();
        assert_eq!(widest, Some((MAX_DEPTH + 1) * 3));
        assert!(order[n as usize - 1].1.ends_with("…─ "));
    }

    #[test]
    fn nothing_gives_nothing() {
        assert!(tree_order(&[]).is_empty());
    }
}
