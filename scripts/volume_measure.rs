//! Liquid volume measured from the particles, as `tests/physics.rs` measures it, shared by
//! `scripts/validate_physics.rs` and the tests that include it.

#![allow(dead_code)]

use surge::scene::Scene;
use surge::sim::Particles;

/// Particles per cell as seeded (2 x 2 x 2).
pub const SEEDED: f64 = 8.0;

/// What [`measure`] finds.
#[derive(Debug, Clone, Copy)]
pub struct VolumeMeasure {
    /// `N h^3 8 / mean(n_c)`, m^3: the particle count over the mean particle count of the bulk
    /// cells (whose 26 neighbours each hold at least half the seeding density, or are wall).
    pub volume: f64,
    /// Largest particle count of a bulk cell.
    pub bulk_max: u32,
    /// Largest particle count of any cell.
    pub any_max: u32,
    /// The cell `[i, j, k]` holding `any_max`.
    pub any_max_cell: [usize; 3],
    /// Share of the particles in cells holding more than twice the seeding density.
    pub over_twice: f64,
}

/// Volume and crowding of the particles `p` of scene `s`.
pub fn measure(s: &Scene, p: &Particles) -> VolumeMeasure {
    let d = &s.domain;
    let n = d.resolution.map(|r| r as usize);
    let mut count = vec![0u32; n[0] * n[1] * n[2]];
    let idx = |i: usize, j: usize, k: usize| i + n[0] * (j + n[1] * k);
    for q in 0..p.len() {
        let x = p.position(q);
        let c: [usize; 3] =
            std::array::from_fn(|a| ((x[a] as f64 - d.lower[a]) / d.cell_size) as usize);
        count[idx(c[0], c[1], c[2])] += 1;
    }
    let wall = |i: usize, j: usize, k: usize| {
        i == 0 || j == 0 || k == 0 || i + 1 == n[0] || j + 1 == n[1] || k + 1 == n[2]
    };
    let (mut sum, mut cells, mut bulk_max) = (0u64, 0u64, 0u32);
    for k in 1..n[2] - 1 {
        for j in 1..n[1] - 1 {
            for i in 1..n[0] - 1 {
                let mut inside = true;
                for dk in 0..3 {
                    for dj in 0..3 {
                        for di in 0..3 {
                            let (a, b, c) = (i + di - 1, j + dj - 1, k + dk - 1);
                            if !wall(a, b, c) && count[idx(a, b, c)] < 4 {
                                inside = false;
                            }
                        }
                    }
                }
                let c = count[idx(i, j, k)];
                if inside && c > 0 {
                    sum += c as u64;
                    cells += 1;
                    bulk_max = bulk_max.max(c);
                }
            }
        }
    }
    let any_max = count.iter().copied().max().unwrap_or(0);
    let at = count.iter().position(|&c| c == any_max).unwrap_or(0);
    let any_max_cell = [at % n[0], (at / n[0]) % n[1], at / (n[0] * n[1])];
    let crowded: u64 = count
        .iter()
        .filter(|&&c| c as f64 > 2.0 * SEEDED)
        .map(|&c| c as u64)
        .sum();
    VolumeMeasure {
        volume: p.len() as f64 / (sum as f64 / cells as f64) * d.cell_size.powi(3),
        bulk_max,
        any_max,
        any_max_cell,
        over_twice: crowded as f64 / p.len().max(1) as f64,
    }
}
