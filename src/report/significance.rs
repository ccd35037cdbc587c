//! The Mann-Whitney U test (two-sided), as benchstat uses it to tell a
//! change from noise: exact for small samples without ties, the normal
//! approximation with tie and continuity correction otherwise.

/// The significance level: differences with a p-value at or above it are
/// reported as not significant (`~`).
pub const ALPHA: f64 = 0.05;

/// Whether samples of `n1` and `n2` can show a difference at all: the
/// smallest two-sided p-value they can give (all of one sample below all
/// of the other, `2 / C(n1 + n2, n1)`) is below [`ALPHA`]. With 3 a side
/// it is 0.1, so a 2x slowdown over three intervals read `~`.
pub fn can_tell(n1: usize, n2: usize) -> bool {
    if n1 == 0 || n2 == 0 {
        return false;
    }
    // C(n1 + n2, n1), in floating point (exact enough for this test).
    let ways = (1..=n1).fold(1.0, |c, k| c * (n2 + k) as f64 / k as f64);
    2.0 / ways < ALPHA
}

/// The fewest samples a side for which [`can_tell`] is true (4).
pub fn fewest_to_tell() -> usize {
    (1..).find(|&n| can_tell(n, n)).unwrap_or(4)
}

/// Two-sided p-value of the hypothesis that `a` and `b` come from the same
/// distribution; `None` when either sample is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|v| (*v, true))
        .chain(b.iter().map(|v| (*v, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut r1 = 0.0;
    let mut ties = 0.0;
    let mut any_ties = false;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        if t > 1.0 {
            any_ties = true;
            ties += t * t * t - t;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        r1 += all[i..=j].iter().filter(|x| x.1).count() as f64 * rank;
        i = j + 1;
    }
    let u = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let (f1, f2) = (n1 as f64, n2 as f64);
    if !any_ties && n1 <= 50 && n2 <= 50 {
        return Some(exact(n1, n2, u.round() as usize));
    }
    let mu = f1 * f2 / 2.0;
    let nf = n as f64;
    let var = f1 * f2 / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = ((u - mu).abs() - 0.5).max(0.0) / var.sqrt();
    Some((erfc(z / std::f64::consts::SQRT_2)).min(1.0))
}

/// Exact two-sided p of U = `u` for samples of `n1` and `n2` without ties.
fn exact(n1: usize, n2: usize, u: usize) -> f64 {
    let max = n1 * n2;
    // ways[j][k]: arrangements of i items of the first sample and j of the
    // second with U = k, built up over i.
    let mut prev: Vec<Vec<f64>> = (0..=n2)
        .map(|_| {
            let mut v = vec![0.0; max + 1];
            v[0] = 1.0;
            v
        })
        .collect();
    for _ in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n2 + 1];
        cur[0][0] = 1.0;
        for j in 1..=n2 {
            for k in 0..=max {
                // The largest item is from the second sample (adds nothing)
                // or from the first (beats all j of the second).
                let mut w = cur[j - 1][k];
                if k >= j {
                    w += prev[j][k - j];
                }
                cur[j][k] = w;
            }
        }
        prev = cur;
    }
    let ways = &prev[n2];
    let total: f64 = ways.iter().sum();
    let below: f64 = ways[..=u.min(max)].iter().sum();
    let above: f64 = ways[u.min(max)..].iter().sum();
    (2.0 * below.min(above) / total).min(1.0)
}

/// The complementary error function (Numerical Recipes' erfcc, relative
/// error below 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_intervals_a_side_can_never_tell_four_can() {
        // 2 / C(6, 3) = 0.1; 2 / C(8, 4) = 0.029; 2 / C(7, 3) = 0.057.
        assert!(!can_tell(3, 3));
        assert!(!can_tell(3, 4));
        assert!(can_tell(4, 4));
        assert!(can_tell(3, 5));
        assert!(!can_tell(0, 10));
        assert_eq!(fewest_to_tell(), 4);
        // The exact test agrees: all of one side below the other.
        let p = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.1).abs() < 1e-9, "{p}");
    }

    #[test]
    fn exact_p_values_match_tables() {
        // Completely separated samples of 5 and 5: p = 2/252.
        let p = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        // Interleaved: nothing to see.
        let p = mann_whitney(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!(p > 0.5, "{p}");
        // 4 and 4 separated: 2/70.
        let p = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((p - 2.0 / 70.0).abs() < 1e-12, "{p}");
        assert_eq!(mann_whitney(&[], &[1.0]), None);
    }

    #[test]
    fn normal_approximation_with_ties() {
        let a: Vec<f64> = (0..60).map(|i| f64::from(i % 10)).collect();
        let b: Vec<f64> = (0..60).map(|i| f64::from(i % 10) + 5.0).collect();
        let p = mann_whitney(&a, &b).unwrap();
        assert!(p < 0.001, "{p}");
        let p = mann_whitney(&a, &a).unwrap();
        assert!(p > 0.9, "{p}");
        let same = [3.0; 10];
        assert_eq!(mann_whitney(&same, &same), Some(1.0));
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-6);
    }
}
