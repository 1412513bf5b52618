//! Tangential friction at the domain walls and at obstacles (issues 11 and 19).
//!
//! Free slip (friction 0, the default) leaves the tangential velocity alone: the pressure
//! projection only sets the normal component on wall faces (Bridson, *Fluid Simulation for
//! Computer Graphics*, 2nd ed., sec. 5.1). With friction `mu` in (0, 1], after the projection
//! every fluid face of component `a` that lies next to a solid across a perpendicular axis
//! (its neighbouring face of the same component is inside the solid: both cells solid, or the
//! face closed by an obstacle) has its velocity relative to the solid scaled:
//!
//! `u_f <- u_s + (1 - mu)^(dt / T) (u_f - u_s)`,  `T` = [`REFERENCE_TIME`] = 0.01 s,
//!
//! where `dt` is the substep's kick (the interval its pressure impulse covers): `mu` is the share
//! of the relative velocity the wall takes away in every 1/100 s, however that time is cut into
//! substeps. Scaling by `1 - mu` per substep, as surge did before, made any friction between 0
//! and 1 depend on the substep count and so on the frame rate (a layer sliding along a floor of
//! friction 0.05 kept 0.51 m/s near it after 0.2 s at 24 fps and 0.12 m/s at 240 fps, 15 against
//! 48 substeps), against issue 19's rule that frames only sample the physics. `mu = 1` is the
//! no-slip condition `u = u_s` imposed on the first layer of tangential
//! faces, half a cell from a grid-aligned wall (Bridson sec. 5.1's "no-slip": set the tangential
//! velocity of the faces at the solid to the solid's; Harlow & Welch 1965 impose it on the
//! same layer). The grid's scaled faces reach the particles through the PIC share of the
//! grid-to-particle transfer and the advection; the FLIP share does not carry the change (it
//! is added to `v_old` too) but gets it on the particles themselves: every particle in a cell
//! of the wall layer has its own relative velocity scaled by the same share
//! ([`rub_particles`]), so a no-slip wall holds the liquid next to it at the wall's velocity
//! without throwing the slowest particles backwards (see there). Each of the domain's six
//! faces has its own friction (`geometry::WallFriction`: a rough floor under smooth side
//! walls); a face next to solids of different frictions (an edge, a wall and an obstacle)
//! takes the largest. Only the scenes that ask for friction run these passes.
//!
//! Layer 2 (sim): takes plain arrays (labels, face kinds, the obstacles' per-face data).

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use rayon::prelude::*;

/// The time in which a friction `mu` takes away the share `mu` of the liquid's velocity
/// relative to the wall, s.
pub const REFERENCE_TIME: f32 = 0.01;

/// The share of the relative tangential velocity a face of friction `mu` keeps over `dt`
/// seconds: `(1 - mu)^(dt / REFERENCE_TIME)`, exactly 0 for no slip.
pub fn kept(mu: f32, dt: f32) -> f32 {
    if mu >= 1.0 {
        0.0
    } else {
        (1.0 - mu).powf(dt / REFERENCE_TIME)
    }
}

/// What the friction pass needs besides the grid.
#[derive(Clone, Copy)]
pub struct FrictionFaces<'a> {
    /// Friction of each of the domain's six wall faces, index `2 * axis + upper` (x_min,
    /// x_max, y_min, y_max, z_min, z_max).
    pub walls: [f32; 6],
    /// The obstacles' open fraction per face (`None`: no obstacles).
    pub open: Option<&'a [Vec<f32>; 3]>,
    /// The friction of the obstacle covering each face (0 where none), with `open`.
    pub obstacle: Option<&'a [Vec<f32>; 3]>,
    /// The moving obstacles' velocity component per face (`None`: static, 0).
    pub solid_vel: Option<&'a [Vec<f32>; 3]>,
}

impl FrictionFaces<'_> {
    /// Whether any face has friction.
    pub fn any(&self) -> bool {
        self.walls.iter().any(|&w| w > 0.0) || self.obstacle.is_some()
    }
}

/// The friction of every face for the particles ([`rub_particles`]): the share of the
/// relative velocity kept this substep (1 where no friction acts) and the solid's velocity,
/// per component, as long as the face grids. Allocated only for scenes with friction.
#[derive(Default)]
pub struct WallLayer {
    pub kept: [Vec<f32>; 3],
    pub solid: [Vec<f32>; 3],
}

impl WallLayer {
    /// Sized for the face grids of `d`.
    pub fn new(d: &GridDims) -> Self {
        Self {
            kept: std::array::from_fn(|a| vec![1.0; d.faces(a)]),
            solid: std::array::from_fn(|a| vec![0.0; d.faces(a)]),
        }
    }

    /// Whether the scene has friction (the layer is allocated).
    pub fn active(&self) -> bool {
        !self.kept[0].is_empty()
    }
}

/// Scales the tangential velocity relative to the solid on every fluid face next to a solid
/// with friction by [`kept`] over `dt` (see the module docs) in `vel`, adds the same change to
/// `old` (the pre-force velocity the FLIP change is formed from, so that the change does not
/// reach the particles through FLIP: [`rub_particles`] applies it to them), and records each
/// face's share kept and solid velocity in `layer`. Plane-parallel, each face written by its
/// own plane's task from read-only inputs: the same for any thread count.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    d: &GridDims,
    labels: &[CellLabel],
    kinds: &[Vec<FaceKind>; 3],
    vel: &mut [Vec<f32>; 3],
    old: &mut [Vec<f32>; 3],
    layer: &mut WallLayer,
    f: FrictionFaces<'_>,
    dt: f32,
) {
    if !f.any() {
        return;
    }
    assert!(
        (0..3).all(|a| layer.kept[a].len() == d.faces(a) && layer.solid[a].len() == d.faces(a)),
        "the wall layer is sized for the face grids (Simulation::new allocates it)"
    );
    let n = d.n;
    let cell_stride = [1, n[0], n[0] * n[1]];
    for a in 0..3 {
        let m = d.face_n(a);
        let face_stride = [1, m[0], m[0] * m[1]];
        let kind = &kinds[a];
        let pl = m[0] * m[1];
        vel[a]
            .par_chunks_mut(pl)
            .zip(old[a].par_chunks_mut(pl))
            .zip(layer.kept[a].par_chunks_mut(pl))
            .zip(layer.solid[a].par_chunks_mut(pl))
            .enumerate()
            .for_each(|(k, (((plane, old), kept_at), solid_at))| {
                for j in 0..m[1] {
                    for i in 0..m[0] {
                        let ijk = [i, j, k];
                        let fi = i + m[0] * (j + m[1] * k);
                        let at = i + m[0] * j;
                        (kept_at[at], solid_at[at]) = (1.0, 0.0);
                        if kind[fi] != FaceKind::Fluid {
                            continue;
                        }
                        // Fluid faces lie between two interior cells c - e_a and c.
                        let c = i + n[0] * (j + n[1] * k);
                        let mut mu = 0.0f32;
                        let mut us = 0.0f32;
                        for b in (0..3).filter(|&b| b != a) {
                            for up in [false, true] {
                                if (!up && ijk[b] == 0) || (up && ijk[b] + 1 >= m[b]) {
                                    continue;
                                }
                                let (g, cn) = if up {
                                    (fi + face_stride[b], c + cell_stride[b])
                                } else {
                                    (fi - face_stride[b], c - cell_stride[b])
                                };
                                let both_solid = labels[cn] == CellLabel::Solid
                                    && labels[cn - cell_stride[a]] == CellLabel::Solid;
                                let nb = ijk[b] as isize + if up { 1 } else { -1 };
                                let domain_wall = nb == 0 || nb as usize + 1 == n[b];
                                let closed = f.open.is_some_and(|o| o[a][g] <= 0.0);
                                if domain_wall && both_solid && !closed {
                                    // The wall on the side the neighbour lies: the upper face
                                    // of axis b when it is the last cell layer.
                                    let wall = f.walls[2 * b + (nb != 0) as usize];
                                    if wall > mu {
                                        (mu, us) = (wall, 0.0);
                                    }
                                } else if (both_solid || closed)
                                    && let Some(fr) = f.obstacle
                                    && fr[a][g] > mu
                                {
                                    mu = fr[a][g];
                                    // The solid's velocity on the covered face beside.
                                    us = f.solid_vel.map_or(0.0, |sv| sv[a][g]);
                                }
                            }
                        }
                        if mu > 0.0 {
                            let k = kept(mu, dt);
                            let u = &mut plane[at];
                            let before = *u;
                            *u = us + k * (before - us);
                            old[at] += *u - before;
                            (kept_at[at], solid_at[at]) = (k, us);
                        }
                    }
                }
            });
    }
}

/// Friction on the particles of the wall layer: a particle in a cell one of whose two faces
/// of component `a` has friction gets `v_a <- u_s + k (v_a - u_s)`, with `k` the share that
/// face keeps this substep and `u_s` the solid's velocity there (the stronger of the two
/// faces). [`apply`] kept the friction's change out of the FLIP change, so this is how the
/// FLIP share of the grid-to-particle transfer that follows sees it; its PIC share reads the
/// grid, where [`apply`] scaled the faces.
///
/// Why not through FLIP, as before session 16: FLIP hands every particle the face's change,
/// `k - 1` times the face's velocity, which is its particles' average; the particles slower
/// than that average (those nearest the wall) were pushed past the wall's velocity, so under
/// a no-slip floor the liquid's lowest half cell slid backwards (-0.14 to -0.30 m/s after
/// 0.2 s of a 1 m/s layer, `tests/friction.rs`) while its cell's mean was the wall's. PIC
/// there instead (the grid's velocity for those particles) fixed that but made partial
/// friction depend on the frame rate again, since every transfer mixes in the faster layer
/// above (0.63 against 0.74 m/s at 24 and 240 fps, friction 0.05). Scaling each particle's
/// own velocity by the rate of [`kept`] does neither. Scenes without friction never call this.
pub fn rub_particles(
    d: &GridDims,
    pos: &[Vec<f32>; 3],
    vel: &mut [Vec<f32>; 3],
    layer: &WallLayer,
) {
    const CHUNK: usize = 1024;
    let [vx, vy, vz] = vel;
    vx.par_chunks_mut(CHUNK)
        .zip(vy.par_chunks_mut(CHUNK))
        .zip(vz.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(c, ((vx, vy), vz))| {
            let v = [vx, vy, vz];
            for t in 0..v[0].len() {
                let i = c * CHUNK + t;
                let ijk = d.cell_ijk([pos[0][i], pos[1][i], pos[2][i]]);
                for a in 0..3 {
                    let m = d.face_n(a);
                    let lo = ijk[0] + m[0] * (ijk[1] + m[1] * ijk[2]);
                    let hi = lo + [1, m[0], m[0] * m[1]][a];
                    let f = if layer.kept[a][hi] < layer.kept[a][lo] {
                        hi
                    } else {
                        lo
                    };
                    let k = layer.kept[a][f];
                    if k < 1.0 {
                        let us = layer.solid[a][f];
                        v[a][t] = us + k * (v[a][t] - us);
                    }
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept share compounds: two half steps keep what one whole step keeps, a reference
    /// time keeps `1 - mu`, no slip keeps nothing, free slip everything.
    #[test]
    fn kept_share_is_a_rate() {
        for mu in [0.05f32, 0.3, 0.9] {
            let whole = kept(mu, REFERENCE_TIME);
            assert!((whole - (1.0 - mu)).abs() < 1e-6, "{mu}: {whole}");
            let half = kept(mu, 0.5 * REFERENCE_TIME);
            assert!(
                (half * half - whole).abs() < 1e-6,
                "{mu}: {half}^2 vs {whole}"
            );
            let tenth = kept(mu, 0.1 * REFERENCE_TIME);
            assert!(
                (tenth.powi(10) - whole).abs() < 1e-5,
                "{mu}: {tenth}^10 vs {whole}"
            );
        }
        assert_eq!(kept(1.0, 1e-4), 0.0);
        assert_eq!(kept(0.0, 0.3), 1.0);
    }
}
