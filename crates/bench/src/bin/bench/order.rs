//! The order of a round's requests, balanced for what came just before each.
//!
//! On this kind of machine a request's time depends on the one before it: a request that
//! follows an idle wait (a bidder's 80 ms, a dripped origin) finds the CPU descheduled and
//! its caches cold, and runs every phase up to three times slower than one that follows a
//! busy request (seen in the navigation auction's access lines: even the client phase, which
//! no auction touches, took 85 µs after an idle wait and 26 µs after a busy request). A
//! rotated order (`(i + round) % n`) changes which case goes first, but every case keeps the
//! same predecessor in every round, so for three or more cases that effect lands on one case
//! every time and reads as its own cost.
//!
//! [`balanced`] gives the rows of a Williams design instead: over `n` rounds (`2n` for an odd
//! `n`) every case is first and last equally often and follows every other case equally
//! often. A bench that alternates rounds between processes passes `round / processes`, so
//! that each process goes through every row. What it does not balance: the request just
//! before a round's first case is the previous round's last (a fixed case for each row), and
//! a run of rounds that is not a whole number of cycles (`--quick`) is balanced only nearly. Balance removes the bias, not the spread: where
//! a difference under a millisecond is judged (the navigation auction's first byte), each
//! timed request also follows a request to the same process at once.

/// The order of round `round`'s `n` cases: a permutation of `0..n`, row `round` of a Williams
/// design (for an odd `n`, rows `n..2n` are the first `n` reversed).
pub fn balanced(round: usize, n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    // The first row: 0, 1, n-1, 2, n-2, 3, ...; row r adds r to each (mod n).
    let first = (0..n).map(|j| match j {
        0 => 0,
        j if j % 2 == 1 => j.div_ceil(2),
        j => n - j / 2,
    });
    let shift = round % n;
    let mut row: Vec<usize> = first.map(|c| (c + shift) % n).collect();
    if n % 2 == 1 && (round / n) % 2 == 1 {
        row.reverse();
    }
    row
}

#[cfg(test)]
mod tests {
    use super::balanced;

    #[test]
    fn each_row_is_a_permutation_and_each_case_follows_every_other_equally_often() {
        for n in 1..=9 {
            let rounds = if n % 2 == 0 { n } else { 2 * n };
            let mut follows = vec![vec![0; n]; n];
            let (mut first, mut last) = (vec![0; n], vec![0; n]);
            for round in 0..rounds {
                let row = balanced(round, n);
                let mut sorted = row.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n {n} round {round}");
                first[row[0]] += 1;
                last[row[n - 1]] += 1;
                for pair in row.windows(2) {
                    follows[pair[0]][pair[1]] += 1;
                }
            }
            assert!(first.iter().all(|&f| f == first[0]), "n {n}: {first:?}");
            assert!(last.iter().all(|&l| l == last[0]), "n {n}: {last:?}");
            let each = if n % 2 == 0 { 1 } else { 2 };
            for (a, row) in follows.iter().enumerate() {
                for (b, &count) in row.iter().enumerate() {
                    let expected = if a == b || n == 1 { 0 } else { each };
                    assert_eq!(count, expected, "n {n}: {a} then {b}");
                }
            }
        }
    }

    /// What the rotated order it replaces does not give: with three cases, a rotation keeps
    /// each case's predecessor.
    #[test]
    fn a_rotation_keeps_each_predecessor_and_the_design_does_not() {
        let rotated = |round: usize| (0..3).map(|k| (k + round) % 3).collect::<Vec<_>>();
        let before = |order: &[usize], case: usize| {
            let at = order.iter().position(|&c| c == case).unwrap();
            at.checked_sub(1).map(|i| order[i])
        };
        let seen = |make: &dyn Fn(usize) -> Vec<usize>| {
            let mut seen: Vec<Option<usize>> = (0..6).map(|r| before(&make(r), 1)).collect();
            seen.sort_unstable();
            seen.dedup();
            seen
        };
        assert_eq!(seen(&rotated), vec![None, Some(0)]);
        assert_eq!(seen(&|r| balanced(r, 3)), vec![None, Some(0), Some(2)]);
    }
}
