//! Quorum arithmetic for an erasure set of `data + parity` drives.

/// Drives that must hold a write before it is acknowledged. With as many parity as data
/// shards, one more than half is needed so that two disjoint halves can never both win.
pub fn write_quorum(data_shards: usize, parity_shards: usize) -> usize {
    if data_shards == parity_shards {
        data_shards + 1
    } else {
        data_shards
    }
}

/// Drives that must agree before a read trusts what they say.
pub fn read_quorum(data_shards: usize) -> usize {
    data_shards
}

/// Counts the successes in per-drive results.
pub fn count_ok<T, E>(results: &[Result<T, E>]) -> usize {
    results.iter().filter(|r| r.is_ok()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorums_overlap_in_enough_drives() {
        for (d, p) in [(6, 3), (4, 2), (2, 2), (8, 8), (12, 4), (2, 1)] {
            let n = d + p;
            let w = write_quorum(d, p);
            let r = read_quorum(d);
            // Any write set and any read set share at least one drive...
            assert!(w + r > n, "{d}+{p}");
            // ...and two concurrent writes cannot both reach quorum on disjoint drives.
            assert!(2 * w > n, "{d}+{p}");
        }
        assert_eq!(write_quorum(6, 3), 6);
        assert_eq!(write_quorum(4, 4), 5);
    }
}
