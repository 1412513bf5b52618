//! Fidelity measures of a surface mesh against its particles (issue 14's targets).
//!
//! - [`coverage`]: per particle, whether it lies inside the mesh (ray parity along +z, the
//!   query nudged off the lattice by a fixed sub-micrometre offset so no ray meets an edge) or
//!   within a distance `s` of a triangle (exact point-triangle distance, Ericson 2005, 5.1.5).
//!   Particles neither inside nor within `s` are "outside by more than s".
//! - [`clusters`]: connected groups of particles closer than a radius (union-find over a cell
//!   grid), to check that every group of more than a few particles is meshed in every frame.
//! - [`flatness`]: RMS height and mean normal deviation of the upward faces of a pool's top.
//! - [`euler_characteristic`]: `V - E + F` per closed mesh: 2 for one sphere-like sheet or
//!   filament without holes.

use crate::mesh::{TriMesh, face_normal};
use rayon::prelude::*;

type V3 = [f64; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Squared distance from `p` to triangle `abc` (Ericson, Real-Time Collision Detection 5.1.5).
pub(super) fn dist2_triangle(p: V3, a: V3, b: V3, c: V3) -> f64 {
    let (ab, ac, ap) = (sub(b, a), sub(c, a), sub(p, a));
    let (d1, d2) = (dot(ab, ap), dot(ac, ap));
    let at = |u: f64, v: f64| {
        let q = [
            a[0] + u * ab[0] + v * ac[0],
            a[1] + u * ab[1] + v * ac[1],
            a[2] + u * ab[2] + v * ac[2],
        ];
        let d = sub(p, q);
        dot(d, d)
    };
    if d1 <= 0.0 && d2 <= 0.0 {
        return at(0.0, 0.0);
    }
    let bp = sub(p, b);
    let (d3, d4) = (dot(ab, bp), dot(ac, bp));
    if d3 >= 0.0 && d4 <= d3 {
        return at(1.0, 0.0);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return at(d1 / (d1 - d3), 0.0);
    }
    let cp = sub(p, c);
    let (d5, d6) = (dot(ab, cp), dot(ac, cp));
    if d6 >= 0.0 && d5 <= d6 {
        return at(0.0, 1.0);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return at(0.0, d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return at(1.0 - w, w);
    }
    let den = 1.0 / (va + vb + vc);
    at(vb * den, vc * den)
}

/// Triangles binned by their bounding boxes into cubic cells (3D) and xy columns (2D).
pub(super) struct Bins {
    pub(super) lo: V3,
    pub(super) cell: f64,
    pub(super) dims: [usize; 3],
    pub(super) start3: Vec<u32>,
    pub(super) tri3: Vec<u32>,
    pub(super) start2: Vec<u32>,
    pub(super) tri2: Vec<u32>,
}

impl Bins {
    /// Bins whose cells are at least as large as `s` and as twice the mean edge (the 27 cells
    /// around a point hold every triangle within `s` of it).
    pub(super) fn for_distance(m: &TriMesh, s: f64) -> Self {
        let edge = m
            .triangles
            .iter()
            .map(|t| {
                let (a, b) = (m.positions[t[0] as usize], m.positions[t[1] as usize]);
                (0..3)
                    .map(|k| ((a[k] - b[k]) as f64).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .sum::<f64>()
            / m.triangles.len() as f64;
        Bins::new(m, s.max(2.0 * edge).max(1e-6))
    }

    /// Calls `f(t)` for every triangle binned in the 27 cells around `p` (with
    /// [`Self::for_distance`]: every triangle within `s` of `p`, and some farther), until `f`
    /// returns true; returns whether it did.
    pub(super) fn any_near(&self, p: V3, mut f: impl FnMut(u32) -> bool) -> bool {
        let c: [i64; 3] = std::array::from_fn(|a| ((p[a] - self.lo[a]) / self.cell).floor() as i64);
        let d = self.dims.map(|v| v as i64);
        for z in c[2] - 1..=c[2] + 1 {
            for y in c[1] - 1..=c[1] + 1 {
                for x in c[0] - 1..=c[0] + 1 {
                    if x < 0 || y < 0 || z < 0 || x >= d[0] || y >= d[1] || z >= d[2] {
                        continue;
                    }
                    let cell = (x + d[0] * (y + d[1] * z)) as usize;
                    let (a, b) = (self.start3[cell], self.start3[cell + 1]);
                    if self.tri3[a as usize..b as usize].iter().any(|&t| f(t)) {
                        return true;
                    }
                }
            }
        }
        false
    }

    fn new(m: &TriMesh, cell: f64) -> Self {
        let mut lo = [f64::MAX; 3];
        let mut hi = [f64::MIN; 3];
        for p in &m.positions {
            for a in 0..3 {
                lo[a] = lo[a].min(p[a] as f64);
                hi[a] = hi[a].max(p[a] as f64);
            }
        }
        let dims: [usize; 3] =
            std::array::from_fn(|a| (((hi[a] - lo[a]) / cell) as usize + 1).max(1));
        let range = |t: &[u32; 3], a: usize| {
            let v = t.map(|i| m.positions[i as usize][a] as f64);
            let c = |x: f64| (((x - lo[a]) / cell).max(0.0) as usize).min(dims[a] - 1);
            (c(v[0].min(v[1]).min(v[2])), c(v[0].max(v[1]).max(v[2])))
        };
        let (mut c3, mut c2) = (Vec::<(u32, u32)>::new(), Vec::<(u32, u32)>::new());
        for (k, t) in m.triangles.iter().enumerate() {
            let r = [range(t, 0), range(t, 1), range(t, 2)];
            for y in r[1].0..=r[1].1 {
                for x in r[0].0..=r[0].1 {
                    c2.push(((x + dims[0] * y) as u32, k as u32));
                    for z in r[2].0..=r[2].1 {
                        c3.push(((x + dims[0] * (y + dims[1] * z)) as u32, k as u32));
                    }
                }
            }
        }
        let csr = |mut v: Vec<(u32, u32)>, n: usize| {
            v.sort_unstable();
            let mut start = vec![0u32; n + 1];
            for &(c, _) in &v {
                start[c as usize + 1] += 1;
            }
            for i in 0..n {
                start[i + 1] += start[i];
            }
            (start, v.into_iter().map(|(_, t)| t).collect::<Vec<_>>())
        };
        let (start3, tri3) = csr(c3, dims[0] * dims[1] * dims[2]);
        let (start2, tri2) = csr(c2, dims[0] * dims[1]);
        Self {
            lo,
            cell,
            dims,
            start3,
            tri3,
            start2,
            tri2,
        }
    }
}

/// Per particle of `pos`: `true` when it is inside the closed mesh `m` or within `s` of it.
pub fn coverage(m: &TriMesh, pos: &[Vec<f32>; 3], s: f64) -> Vec<bool> {
    let n = pos[0].len();
    if m.triangles.is_empty() {
        return vec![false; n];
    }
    let bins = Bins::for_distance(m, s);
    let vp = |i: u32| m.positions[i as usize].map(|v| v as f64);
    (0..n)
        .into_par_iter()
        .map(|i| {
            let p = [pos[0][i] as f64, pos[1][i] as f64, pos[2][i] as f64];
            let c: [i64; 3] =
                std::array::from_fn(|a| ((p[a] - bins.lo[a]) / bins.cell).floor() as i64);
            let d = bins.dims.map(|v| v as i64);
            // Within s of a triangle: triangles binned in the 27 cells around p.
            let near = bins.any_near(p, |t| {
                let tr = m.triangles[t as usize];
                dist2_triangle(p, vp(tr[0]), vp(tr[1]), vp(tr[2])) <= s * s
            });
            if near {
                return true;
            }
            // Inside: parity of the crossings of the +z ray from a nudged point.
            if c[0] < 0 || c[1] < 0 || c[0] >= d[0] || c[1] >= d[1] {
                return false;
            }
            let q = [p[0] + 3.1e-7, p[1] + 1.7e-7];
            let col = (c[0] + d[0] * c[1]) as usize;
            let (a, b) = (bins.start2[col], bins.start2[col + 1]);
            let mut crossings = 0;
            for &t in &bins.tri2[a as usize..b as usize] {
                let [p0, p1, p2] = m.triangles[t as usize].map(vp);
                let e =
                    |u: V3, v: V3| (v[0] - u[0]) * (q[1] - u[1]) - (v[1] - u[1]) * (q[0] - u[0]);
                let (w0, w1, w2) = (e(p1, p2), e(p2, p0), e(p0, p1));
                let inside =
                    (w0 > 0.0 && w1 > 0.0 && w2 > 0.0) || (w0 < 0.0 && w1 < 0.0 && w2 < 0.0);
                if !inside {
                    continue;
                }
                let sum = w0 + w1 + w2;
                let z = (w0 * p0[2] + w1 * p1[2] + w2 * p2[2]) / sum;
                if z > p[2] {
                    crossings += 1;
                }
            }
            crossings % 2 == 1
        })
        .collect()
}

/// Connected groups of particles closer than `radius`: a group index per particle (groups
/// numbered in order of their first particle) and the group sizes.
pub fn clusters(pos: &[Vec<f32>; 3], radius: f64) -> (Vec<u32>, Vec<u32>) {
    let n = pos[0].len();
    let p = |i: usize| [pos[0][i] as f64, pos[1][i] as f64, pos[2][i] as f64];
    let mut lo = [f64::MAX; 3];
    for i in 0..n {
        for (l, x) in lo.iter_mut().zip(p(i)) {
            *l = l.min(x);
        }
    }
    let key = |x: V3| -> [i64; 3] { std::array::from_fn(|a| ((x[a] - lo[a]) / radius) as i64) };
    let mut cells: std::collections::HashMap<[i64; 3], Vec<u32>> = Default::default();
    for i in 0..n {
        cells.entry(key(p(i))).or_default().push(i as u32);
    }
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while p[x as usize] != x {
            p[x as usize] = p[p[x as usize] as usize];
            x = p[x as usize];
        }
        x
    }
    for i in 0..n {
        let c = key(p(i));
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let Some(list) = cells.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) else {
                        continue;
                    };
                    for &j in list {
                        if (j as usize) <= i {
                            continue;
                        }
                        let d = sub(p(i), p(j as usize));
                        if dot(d, d) < radius * radius {
                            let (a, b) = (find(&mut parent, i as u32), find(&mut parent, j));
                            if a != b {
                                parent[a.max(b) as usize] = a.min(b);
                            }
                        }
                    }
                }
            }
        }
    }
    let mut id = vec![u32::MAX; n];
    let mut sizes = Vec::new();
    let mut group = vec![0u32; n];
    for (i, g) in group.iter_mut().enumerate() {
        let r = find(&mut parent, i as u32) as usize;
        if id[r] == u32::MAX {
            id[r] = sizes.len() as u32;
            sizes.push(0);
        }
        *g = id[r];
        sizes[id[r] as usize] += 1;
    }
    (group, sizes)
}

/// Groups of more than `min_size` particles (closer than `radius`) none of whose particles is
/// covered by the mesh ([`coverage`]): groups the mesh dropped.
pub fn missed_clusters(covered: &[bool], group: &[u32], sizes: &[u32], min_size: u32) -> usize {
    let mut hit = vec![false; sizes.len()];
    for (g, c) in group.iter().zip(covered) {
        hit[*g as usize] |= *c;
    }
    (0..sizes.len())
        .filter(|&g| sizes[g] > min_size && !hit[g])
        .count()
}

/// RMS height (m) about the mean and area-weighted mean normal deviation from +z (degrees) of
/// the mesh's upward faces (normal z > 0.5) whose centroid lies inside `[lo, hi]` in x and y.
pub fn flatness(m: &TriMesh, lo: [f64; 2], hi: [f64; 2]) -> (f64, f64) {
    let (mut a_sum, mut z_sum, mut z2_sum, mut ang_sum) = (0.0, 0.0, 0.0, 0.0);
    for t in &m.triangles {
        let p = t.map(|v| m.positions[v as usize]);
        let c: V3 = std::array::from_fn(|a| (p[0][a] + p[1][a] + p[2][a]) as f64 / 3.0);
        if c[0] < lo[0] || c[0] > hi[0] || c[1] < lo[1] || c[1] > hi[1] {
            continue;
        }
        let n = face_normal(p);
        let nl = ((n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) as f64).sqrt();
        if nl == 0.0 || (n[2] as f64) < 0.5 * nl {
            continue;
        }
        let area = 0.5 * nl;
        a_sum += area;
        z_sum += area * c[2];
        z2_sum += area * c[2] * c[2];
        ang_sum += area * (n[2] as f64 / nl).clamp(-1.0, 1.0).acos().to_degrees();
    }
    if a_sum == 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = z_sum / a_sum;
    (
        (z2_sum / a_sum - mean * mean).max(0.0).sqrt(),
        ang_sum / a_sum,
    )
}

/// Euler characteristic `V - E + F` of a closed mesh (each edge shared by two triangles).
pub fn euler_characteristic(m: &TriMesh) -> i64 {
    let used = {
        let mut u = vec![false; m.positions.len()];
        for t in &m.triangles {
            for &v in t {
                u[v as usize] = true;
            }
        }
        u.iter().filter(|x| **x).count() as i64
    };
    let f = m.triangles.len() as i64;
    used - 3 * f / 2 + f
}
