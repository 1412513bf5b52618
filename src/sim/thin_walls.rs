//! Thin walls between liquid and air (experiment).
use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, FaceKind, GridDims};

/// Trilinear node distance at `p` (grid coordinates in cells from `lower`).
#[inline]
fn phi_at(node_phi: &[f32], n: [usize; 3], g: [f32; 3]) -> f32 {
    let nn = n.map(|m| m + 1);
    let mut i0 = [0usize; 3];
    let mut f = [0.0f32; 3];
    for a in 0..3 {
        let x = g[a].clamp(0.0, n[a] as f32);
        let i = (x.floor() as usize).min(n[a] - 1);
        i0[a] = i;
        f[a] = x - i as f32;
    }
    let at = |di: usize, dj: usize, dk: usize| {
        node_phi[(i0[0] + di) + nn[0] * ((i0[1] + dj) + nn[1] * (i0[2] + dk))]
    };
    let mut s = 0.0;
    for (dk, wz) in [(0, 1.0 - f[2]), (1, f[2])] {
        for (dj, wy) in [(0, 1.0 - f[1]), (1, f[1])] {
            for (di, wx) in [(0, 1.0 - f[0]), (1, f[0])] {
                s += wx * wy * wz * at(di, dj, dk);
            }
        }
    }
    s
}

/// Whether the straight segment from `p` to `q` (grid coordinates) crosses solid.
fn crosses(phi: &dyn Fn([f32; 3]) -> f32, p: [f32; 3], q: [f32; 3]) -> bool {
    let len = (0..3).map(|a| (q[a] - p[a]).powi(2)).sum::<f32>().sqrt();
    let steps = (len / 0.1).ceil().max(1.0) as u32;
    (0..=steps).any(|s| {
        let t = s as f32 / steps as f32;
        phi(std::array::from_fn(|a| p[a] + t * (q[a] - p[a]))) < 0.0
    })
}

/// Seals (kind `Wall`, open fraction 0) the faces between a fluid cell near a solid and an
/// empty cell whose open part the cell's particles cannot reach without crossing solid.
/// Returns the number sealed.
pub fn seal(
    d: &GridDims,
    node_phi: &[f32],
    cell_phi: &[f32],
    sp: &SortedParticles,
    labels: &[CellLabel],
    kinds: &mut [Vec<FaceKind>; 3],
    open: &mut [Vec<f32>; 3],
    phi: &dyn Fn([f32; 3]) -> f32,
) -> usize {
    let n = d.n;
    let h = d.h;
    let inv = 1.0 / h;
    let mut sealed = 0;
    for k in 1..n[2] - 1 {
        for j in 1..n[1] - 1 {
            for i in 1..n[0] - 1 {
                let c = d.cell(i, j, k);
                if labels[c] != CellLabel::Fluid || cell_phi[c] > 0.9 * h {
                    continue;
                }
                let (s0, s1) = (sp.cell_start[c] as usize, sp.cell_start[c + 1] as usize);
                if s1 == s0 {
                    continue;
                }
                let mut cen = [0.0f32; 3];
                for s in s0..s1 {
                    for a in 0..3 {
                        cen[a] += (sp.pos[a][s] - d.lower[a]) * inv;
                    }
                }
                cen = cen.map(|x| x / (s1 - s0) as f32);
                for a in 0..3 {
                    let m = d.face_n(a);
                    let stride = [1, n[0], n[0] * n[1]][a];
                    for up in 0..2 {
                        let nbc = if up == 1 { c + stride } else { c - stride };
                        if labels[nbc] != CellLabel::Empty {
                            continue;
                        }
                        let mut f = [i, j, k];
                        f[a] += up;
                        let face = f[0] + m[0] * (f[1] + m[1] * f[2]);
                        if kinds[a][face] != FaceKind::Fluid {
                            continue;
                        }
                        // Open part's centroid, sampled 4 x 4 on the face.
                        let (u, v) = ((a + 1) % 3, (a + 2) % 3);
                        let mut acc = [0.0f32; 3];
                        let mut cnt = 0;
                        for su in 0..4 {
                            for sv in 0..4 {
                                let mut g = f.map(|x| x as f32);
                                g[u] += (su as f32 + 0.5) / 4.0;
                                g[v] += (sv as f32 + 0.5) / 4.0;
                                if phi(g) > 0.0 {
                                    for b in 0..3 {
                                        acc[b] += g[b];
                                    }
                                    cnt += 1;
                                }
                            }
                        }
                        if cnt == 0 {
                            continue;
                        }
                        let fc = acc.map(|x| x / cnt as f32);
                        if crosses(phi, cen, fc) {
                            kinds[a][face] = FaceKind::Wall;
                            open[a][face] = 0.0;
                            sealed += 1;
                        }
                    }
                }
            }
        }
    }
    sealed
}
