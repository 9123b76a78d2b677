//! The end-of-run check: every list's count equals the number of visible links in the list,
//! and every stored link has one id2 index entry. A list with visible links but no count is a
//! mismatch too (its count reads as 0).
//!
//! Owns: comparing what a [`LinkStore`] holds once no one writes; must not write or print.

use anyhow::Result;

use super::store::LinkStore;

/// One list whose count is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub id1: u64,
    pub link_type: u64,
    pub count: u64,
    pub visible: u64,
}

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    pub lists: u64,
    pub links: u64,
    pub visible: u64,
    pub index_entries: u64,
    pub mismatches: u64,
    /// The first few mismatches, in key order.
    pub first: Vec<Mismatch>,
}

/// How many mismatches the report keeps to print.
const KEEP: usize = 10;

impl Report {
    pub fn ok(&self) -> bool {
        self.mismatches == 0 && self.index_entries == self.links
    }

    fn note(&mut self, m: Mismatch) {
        self.mismatches += 1;
        if self.first.len() < KEEP {
            self.first.push(m);
        }
    }

    /// The checker's lines: the verdict, then the first mismatches.
    pub fn text(&self) -> String {
        let mut s = format!(
            "checker: {} count keys, {} links ({} visible), {} id2 index entries: {} count mismatches{}\n",
            self.lists,
            self.links,
            self.visible,
            self.index_entries,
            self.mismatches,
            if self.index_entries == self.links { "" } else { ", INDEX DOES NOT MATCH THE LINKS" },
        );
        for m in &self.first {
            s.push_str(&format!(
                "  mismatch: id1 {} link_type {}: count {} but {} visible links\n",
                m.id1, m.link_type, m.count, m.visible
            ));
        }
        s
    }
}

/// Checks `store`; call it only when no thread writes.
pub fn check(store: &dyn LinkStore) -> Result<Report> {
    let mut report = Report::default();
    // Visible links per list, in key order (the links family is sorted by list first).
    let mut lists: Vec<(u64, u64, u64)> = Vec::new();
    store.scan_links(&mut |l| {
        report.links += 1;
        if lists.last().is_none_or(|&(id1, t, _)| (id1, t) != (l.id1, l.link_type)) {
            lists.push((l.id1, l.link_type, 0));
        }
        if l.visible {
            report.visible += 1;
            if let Some(last) = lists.last_mut() {
                last.2 += 1;
            }
        }
    })?;
    let mut counts: Vec<(u64, u64, u64)> = Vec::new();
    store.scan_counts(&mut |id1, t, c| counts.push((id1, t, c)))?;
    report.lists = counts.len() as u64;
    merge(&lists, &counts, &mut report);
    report.index_entries = store.index_entries()?;
    Ok(report)
}

/// Walks both sorted lists together; a list missing on either side counts as 0 there.
fn merge(lists: &[(u64, u64, u64)], counts: &[(u64, u64, u64)], report: &mut Report) {
    use std::cmp::Ordering;
    let (mut i, mut j) = (0, 0);
    while i < lists.len() || j < counts.len() {
        // Which side holds the smaller (id1, link_type); a finished side is never smaller.
        let order = match (lists.get(i), counts.get(j)) {
            (Some(l), Some(c)) => (l.0, l.1).cmp(&(c.0, c.1)),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        let (key, visible, count) = match order {
            Ordering::Equal => {
                (i, j) = (i + 1, j + 1);
                ((lists[i - 1].0, lists[i - 1].1), lists[i - 1].2, counts[j - 1].2)
            }
            Ordering::Less => {
                i += 1;
                ((lists[i - 1].0, lists[i - 1].1), lists[i - 1].2, 0)
            }
            Ordering::Greater => {
                j += 1;
                ((counts[j - 1].0, counts[j - 1].1), 0, counts[j - 1].2)
            }
        };
        if visible != count {
            report.note(Mismatch { id1: key.0, link_type: key.1, count, visible });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_finds_wrong_missing_and_extra_counts() {
        let lists = [(1, 5, 2), (2, 5, 0), (3, 5, 1), (4, 5, 3)];
        let counts = [(1, 5, 2), (2, 5, 1), (4, 5, 3), (9, 5, 0), (9, 6, 4)];
        let mut r = Report::default();
        merge(&lists, &counts, &mut r);
        let got: Vec<(u64, u64, u64)> = r.first.iter().map(|m| (m.id1, m.count, m.visible)).collect();
        assert_eq!(got, [(2, 1, 0), (3, 0, 1), (9, 4, 0)]);
        assert_eq!(r.mismatches, 3);
        assert!(r.text().contains("3 count mismatches") && r.text().contains("  mismatch: id1 2 "));
    }
}
