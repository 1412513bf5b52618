//! The faces of obstacles: the solid velocity the projection's fluxes use and the velocity a
//! wall face keeps for the particles.
//!
//! Method (Batty, Bertails and Bridson 2007 for the fractional faces; free slip as in
//! Bridson 2015, sec. 5.1: a solid fixes the liquid's velocity along its normal only):
//! - Every face a moving solid covers at least partly keeps the solid's velocity component
//!   `u_solid` (`face_vel`), which the projection's flux `w u + (1 - w) u_solid` uses.
//! - A **wall face** (a solid cell on one side, or closed) is not solved for: its flux is
//!   prescribed. Its flux is `o u + (1 - o) u_solid` with `o` its open fraction
//!   (`pressure::system::flux_divergence`), `u` the value it keeps, which particles also
//!   interpolate. So `u` is the velocity of the liquid in the face's open part (or, on a
//!   closed face, what the liquid beside it would have there): on the open part of a domain
//!   wall's face (a solid passing through the domain's wall) zero, the wall's; elsewhere the
//!   solid's velocity along its surface normal `n` and the liquid's (splatted) across it,
//!   `u_a = u_liquid,a - (u_liquid . n) n_a + (u_solid . n) n_a` for face component `a`
//!   (Batty's reference code constrains the extrapolated velocity in the solid the same way),
//!   the other components of `u_liquid` from the neighbouring faces of the other axes that
//!   hold the liquid's velocity (`liquid_at`). A translating box's faces (`n` along an axis) get
//!   the solid's component or the liquid's; a solid turning in place (`u_solid . n = 0`) gives
//!   none of its tangential speed. Until session 37 only the face's own component was used,
//!   `(1 - n_a^2) u_liquid,a + (u_solid . n) n_a`: where the wall is oblique to the grid,
//!   liquid moving with it got a velocity across the motion (`u_x n_x n_y` on the y faces),
//!   and water carried in a moving sphere or can circulated in it (0.60 m/s in
//!   `water_carried_in_a_moving_sphere_stays_at_rest_in_it`).
//! - A **free face inside the solids** (both cells solid), where the extrapolation from the
//!   liquid does not reach, keeps the same for the particles beside the solid (`inner_vel`,
//!   [`SolidState::inner_velocities`]; where a fluid cell lies within a cell of the face's
//!   cells, the faces a particle can read), with `n` the normal of the solid within half a
//!   cell whose normal lies most along `a`: the solid moves the liquid along its normal only,
//!   and in a corner (a floor and a wall, overlapping boxes) the x faces inside the floor take
//!   the wall's normal motion. Until session 37 such faces kept 0 (a static solid's value):
//!   particles beside a wall retreating across the grid read it and fell behind (the carried
//!   container of `tests/obstacles_carried.rs`, 0.024 m/s and 3.5 mm; with the solid's whole
//!   velocity instead, the plate sliding under water dragged it at 0.0012 m/s, and with the
//!   nearest solid's normal alone the container's corner particle lagged at 0.018 m/s).
//! - **Static solids** (session 38) are solids at rest: their wall faces keep the same free-slip
//!   value with `u_solid = 0`, `u_a - (u_liquid . n) n_a`, `n` the gradient of the cell-centre
//!   distance across the face (`phi_normal`: no distance query per face; a static solid's
//!   distances are computed once), and their flux `o u` (`face_vel` holds 0 for them). Until
//!   session 38 they kept 0: along a wall aligned with the grid that is the normal component,
//!   but along a wall oblique to it the liquid's tangential velocity has components on those
//!   faces too, which the particles beside the wall read as 0: a layer sliding at 1 m/s along
//!   a wall turned 30 degrees kept 0.33 m/s within a cell of it after 0.2 s, and water
//!   swirling in a standing can lost 38% of its angular momentum in half a second (10% when
//!   the same can was keyframed to stand still; `tests/obstacles_static_slip.rs`). Their
//!   inner free faces keep what the extrapolation gives them (the moving solids' `inner_vel`
//!   changed the can's figure by 0.2%).
//! - The solid's velocity is its mean over the substep, from its pose at the substep's start
//!   to its pose at its end ([`crate::geometry::transform::Motion::mean_velocity`]), the
//!   geometry (labels, open fractions) its pose at the start: a wall accelerating through a
//!   substep carries the liquid beside it as far as it moves (until session 37 the velocity
//!   at the start left the liquid behind a wall accelerating away, 12.8 mm at 2 m/s^2,
//!   `water_in_an_accelerating_container_tilts_to_a_over_g_and_stays_against_its_walls`).
//! - Before session 33 a wall face kept the solid's whole velocity as its flux and as the
//!   particles' value: a plate sliding under water at rest, its top mid-cell, drove the water's
//!   bottom layer through the faces of the partly covered cells it labels solid (the plate's
//!   0.5 m/s over the whole face where 60% of it is plate) and through the domain's wall it
//!   slides through, and the water moved at up to 0.95 m/s; a cylinder spinning in place made
//!   the water beside it co-rotate at 0.31 m/s (0.8 m/s at its surface). Now both stay at rest
//!   (`tests/obstacles_carried.rs`).
//!
//! Per face, disjoint writes: the same for any thread count.

use super::far;
use super::{Posed, SolidState};
use crate::sim::mac_grid::{CellLabel, FaceKind, GridDims};
use crate::sim::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Faces per task of [`SolidState::close_faces`].
const CLOSE_CHUNK: usize = 1 << 16;

impl SolidState {
    /// Marks every face between two non-solid cells that the solids close completely (open
    /// fraction 0, e.g. inside a wall thinner than a cell) as a wall face: it keeps the
    /// solid's normal velocity through the projection and the extrapolation.
    pub fn close_faces(&mut self, kinds: &mut [Vec<FaceKind>; 3]) {
        if !self.active() {
            return;
        }
        if !self.obstacles.animated() {
            // Static solids: their closed faces, found once, are all there is to visit.
            let open = &self.fractions.open;
            let closed = self.closed_faces.get_or_insert_with(|| {
                std::array::from_fn(|a| {
                    (open[a].par_iter().enumerate())
                        .filter(|(_, w)| **w <= 0.0)
                        .map(|(f, _)| f as u32)
                        .collect()
                })
            });
            for (kind, list) in kinds.iter_mut().zip(closed.iter()) {
                for &f in list {
                    let k = &mut kind[f as usize];
                    if *k == FaceKind::Fluid {
                        *k = FaceKind::Wall;
                    }
                }
            }
            return;
        }
        for (kind, open) in kinds.iter_mut().zip(&self.fractions.open) {
            // In chunks, each a plain loop the compiler vectorises (an element at a time
            // through rayon's zip took 1.4 ms a substep on the 1M dam break's 2M faces).
            kind.par_chunks_mut(CLOSE_CHUNK)
                .zip(open.par_chunks(CLOSE_CHUNK))
                .for_each(|(ks, ws)| {
                    for (k, &w) in ks.iter_mut().zip(ws) {
                        if w <= 0.0 && *k == FaceKind::Fluid {
                            *k = FaceKind::Wall;
                        }
                    }
                });
        }
    }

    /// For moving obstacles: the solid's velocity component on every face the solids cover at
    /// least partly (open fraction below 1, or a solid cell on either side), kept for the
    /// pressure solve's fluxes `w u + (1 - w) u_solid`, and every such wall face's velocity
    /// as the module docs say, from `splat` (the splatted velocity, before the forces) where
    /// the liquid's own is wanted (static obstacles: the wall faces only,
    /// [`Self::static_wall_velocities`]); and
    /// the free faces inside the solids beside the liquid (`labels`: the cells'; `kinds`: the
    /// faces'). For the substep from `t` to `end` (s): the solids posed at `t`, moving at
    /// their mean velocity over the substep.
    pub fn wall_velocities(
        &mut self,
        d: &GridDims,
        (t, end): (f64, f64),
        labels: &[CellLabel],
        kinds: &[Vec<FaceKind>; 3],
        splat: &[Vec<f32>; 3],
        vel: &mut [Vec<f32>; 3],
    ) {
        if !self.active() {
            return;
        }
        if !self.obstacles.animated() {
            self.static_wall_velocities(d, kinds, splat, vel);
            return;
        }
        self.set_poses(t);
        // The solids where they stand at the substep's start, moving at their mean velocity
        // over it (the liquid beside a wall moves with it through the substep).
        let steps = self.step_poses.iter_mut().zip(&self.poses);
        for (s, (step, now)) in self.obstacles.solids.iter().zip(steps) {
            *step = (now.0, s.motion().mean_velocity(t, end));
        }
        let posed = Posed {
            solids: &self.obstacles.solids[..],
            poses: &self.step_poses,
        };
        let n = d.n;
        let (h, lo) = (d.h as f64, d.lower.map(|x| x as f64));
        let split = self.split.as_ref();
        let (boxes, far) = (&self.boxes[..], self.far_cells * h);
        let slacks = &self.slacks[..];
        let [near, tmp] = &mut self.near_liquid;
        mark_near_liquid(n, labels, near, tmp);
        let near = &self.near_liquid[0][..];
        for a in 0..3 {
            let m = d.face_n(a);
            let stride = [1, n[0], n[0] * n[1]][a];
            let (phi, open) = (&self.cell_phi, &self.fractions.open[a]);
            vel[a]
                .par_chunks_mut(m[0])
                .zip(kinds[a].par_chunks(m[0]).zip(splat[a].par_chunks(m[0])))
                .zip(
                    self.face_vel[a]
                        .par_chunks_mut(m[0])
                        .zip(self.inner_vel[a].par_chunks_mut(m[0])),
                )
                .enumerate()
                .for_each(|(row, ((vr, (kr, sr)), (fv, iv)))| {
                    let (j, k) = (row % m[1], row / m[1]);
                    for i in 0..m[0] {
                        let ijk = [i, j, k];
                        let f = i + m[0] * row;
                        // Cells on both sides of the face (the face lies between c - stride and c).
                        let inside = ijk[a] > 0 && ijk[a] < n[a];
                        let c = i + n[0] * (j + n[1] * k);
                        let covered =
                            open[f] < 1.0 || (inside && (phi[c] < 0.0 || phi[c - stride] < 0.0));
                        iv[i] = 0.0;
                        if !covered {
                            fv[i] = 0.0;
                            continue; // no obstacle here (a domain wall, or open liquid)
                        }
                        let mut p = [0.0; 3];
                        for b in 0..3 {
                            let off = if b == a { 0.0 } else { 0.5 };
                            p[b] = lo[b] + (ijk[b] as f64 + off) * h;
                        }
                        let nearest = match split {
                            // Far from the moving solids, a covered face is a static solid's
                            // (see `far.rs`): its wall does not move.
                            Some(split) if far::beyond((boxes, slacks), &split.moving, p, far) => {
                                None
                            }
                            Some(split) => split.moving_nearest(&posed, p),
                            None => Some(posed.nearest_near(p, (boxes, slacks), far)),
                        };
                        // The nearest moving solid and its velocity at the face.
                        let moving = nearest.map(|s| (s, posed.get(s).velocity(p)));
                        fv[i] = moving.map_or(0.0, |(_, v)| v[a] as f32);
                        if kr[i] == FaceKind::Free
                            && inside
                            && (near[c] | near[c - stride]) != 0
                            && split
                                .is_none_or(|s| !far::beyond((boxes, slacks), &s.moving, p, far))
                        {
                            // Inside the solids, near their surface: for the particles beside
                            // them to interpolate (far from every moving solid it is a static
                            // one's, 0).
                            let found = inner_normal(&posed, (boxes, slacks), p, a, h);
                            iv[i] = found.map_or(0.0, |(g, un)| {
                                let u = liquid_at(d, (splat, kinds), ijk, a, sr[i]);
                                free_slip(u, g, un, a)
                            });
                        }
                        if kr[i] != FaceKind::Wall || !inside {
                            continue;
                        }
                        // The value particles interpolate on a wall face; the projection's flux
                        // through it is `o u + (1 - o) u_solid` with `o` its open fraction
                        // (`pressure::system::flux_divergence`).
                        vr[i] = match moving {
                            // The open part of a domain wall's face: the wall, at rest.
                            _ if open[f] > 0.0 && d.is_domain_wall_face(a, ijk[a]) => 0.0,
                            // A static solid's wall: free slip along it, at rest.
                            None => phi_normal(d, phi, ijk, a)
                                .map_or(0.0, |g| at_rest(d, (splat, kinds), ijk, a, g)),
                            // Free slip: the solid's velocity along its normal `g`, the
                            // liquid's (splatted) across it.
                            Some((s, v)) => {
                                let g = posed.get(s).distance_and_normal(p).1;
                                let un = g[0] * v[0] + g[1] * v[1] + g[2] * v[2];
                                free_slip(liquid_at(d, (splat, kinds), ijk, a, sr[i]), g, un, a)
                            }
                        };
                    }
                });
        }
    }

    /// [`Self::wall_velocities`] without moving obstacles: every wall face a static solid
    /// covers keeps the liquid's velocity along the solid's surface ([`free_slip`] with the
    /// solid at rest); the other wall faces (the domain's walls) keep 0. The free faces inside
    /// the solids keep what the extrapolation gives them (a static solid has no motion of its
    /// own to impose there). The covered faces and their normals are the same for the whole
    /// run: found at the first call ([`static_faces`]), each substep visits only them (a pass
    /// over every face cost 0.28 ms a substep on `scenes/glass.json` before any work).
    fn static_wall_velocities(
        &mut self,
        d: &GridDims,
        kinds: &[Vec<FaceKind>; 3],
        splat: &[Vec<f32>; 3],
        vel: &mut [Vec<f32>; 3],
    ) {
        let (phi, open) = (&self.cell_phi, &self.fractions.open);
        let list = (self.static_faces).get_or_insert_with(|| static_faces(d, phi, open));
        for a in 0..3 {
            let m = d.face_n(a);
            let (v, kr) = (SyncPtr(vel[a].as_mut_ptr()), &kinds[a]);
            assert!(list[a].iter().all(|&(f, _)| (f as usize) < vel[a].len()));
            list[a].par_chunks(1024).for_each(|chunk| {
                for &(f, g) in chunk {
                    let f = f as usize;
                    if kr[f] != FaceKind::Wall {
                        continue;
                    }
                    let ijk = [f % m[0], (f / m[0]) % m[1], f / (m[0] * m[1])];
                    let x = at_rest(d, (splat, kinds), ijk, a, g.map(|x| x as f64));
                    // SAFETY: in bounds (asserted above); the list holds each face once (one
                    // entry per face visited, `static_faces`), so the tasks write disjoint faces.
                    unsafe { *v.get(f) = x };
                }
            });
        }
    }
}

/// Per face component, the faces static solids cover and the solids' unit normal at each.
pub(super) type StaticFaces = [Vec<(u32, [f32; 3])>; 3];

/// Per face component, the faces static solids cover that can be wall faces (a solid cell on
/// either side, or an open fraction below 1), inside the grid and not the open part of a
/// domain wall's face (which keeps the wall's 0), each with the solids' unit normal there
/// ([`phi_normal`]; faces without one are left out: they keep 0): from the cell-centre
/// distances `phi` and the open fractions `open`, fixed for static solids.
fn static_faces(d: &GridDims, phi: &[f32], open: &[Vec<f32>; 3]) -> StaticFaces {
    let n = d.n;
    std::array::from_fn(|a| {
        let stride = [1, n[0], n[0] * n[1]][a];
        d.list_faces(a, |ijk, f, c| {
            let o = open[a][f];
            let covered = o < 1.0 || phi[c] < 0.0 || phi[c - stride] < 0.0;
            if !covered || (o > 0.0 && d.is_domain_wall_face(a, ijk[a])) {
                return None;
            }
            let g = phi_normal(d, phi, ijk, a)?;
            Some((f as u32, g.map(|x| x as f32)))
        })
    })
}

/// The unit gradient of the cell-centre distance `phi` at the face `ijk` of component `a`
/// (between cells `ijk - e_a` and `ijk`): along `a` the difference of the two cells, across it
/// the mean of their central differences (one-sided at the grid's edge); `None` where a
/// distance it reads is not finite or the gradient vanishes.
fn phi_normal(d: &GridDims, phi: &[f32], ijk: [usize; 3], a: usize) -> Option<[f64; 3]> {
    let n = d.n;
    let strides = [1, n[0], n[0] * n[1]];
    let c = ijk[0] + n[0] * (ijk[1] + n[1] * ijk[2]);
    let cells = [c - strides[a], c];
    let mut g = [0.0f64; 3];
    g[a] = phi[c] as f64 - phi[c - strides[a]] as f64;
    for b in (0..3).filter(|&b| b != a) {
        let (lo, hi) = (ijk[b] > 0, ijk[b] + 1 < n[b]);
        let mut sum = 0.0;
        for x in cells {
            let up = if hi { phi[x + strides[b]] } else { phi[x] } as f64;
            let down = if lo { phi[x - strides[b]] } else { phi[x] } as f64;
            sum += (up - down) / if lo && hi { 2.0 } else { 1.0 };
        }
        g[b] = 0.5 * sum;
    }
    let len = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
    (len.is_finite() && len > 0.0).then(|| g.map(|x| x / len))
}

/// Marks in `near` (one byte per cell of the grid `n`) the cells with a fluid cell within a
/// cell of them (the 27 cells around, Chebyshev distance 1), by three passes of a 3-wide
/// maximum along each axis (`tmp`: scratch of the same size). A face of axis `a` between cells
/// `c - e_a` and `c` is beside the liquid when either is marked: the faces a particle in or
/// beside the liquid can interpolate (a particle lies in a fluid cell or, in a solid's skin,
/// in a solid-labelled cell beside one, and reads the faces of its cell and the next). Each
/// output row from its own inputs: the same for any thread count.
fn mark_near_liquid(n: [usize; 3], labels: &[CellLabel], near: &mut [u8], tmp: &mut [u8]) {
    let plane = n[0] * n[1];
    // Along x, from the labels.
    near.par_chunks_mut(n[0])
        .zip(labels.par_chunks(n[0]))
        .for_each(|(out, row)| {
            for (i, o) in out.iter_mut().enumerate() {
                let span = &row[i.saturating_sub(1)..(i + 2).min(n[0])];
                *o = span.contains(&CellLabel::Fluid) as u8;
            }
        });
    // Along y, then along z: rows of x from the rows beside them.
    let widen = |src: &[u8], dst: &mut [u8], step: usize, count: usize| {
        dst.par_chunks_mut(n[0]).enumerate().for_each(|(r, out)| {
            let at = (r * n[0] / step) % count;
            let (lo, hi) = (at.saturating_sub(1), (at + 1).min(count - 1));
            out.fill(0);
            for m in lo..=hi {
                let from = (r * n[0] + m * step) - at * step;
                for (o, &x) in out.iter_mut().zip(&src[from..from + n[0]]) {
                    *o |= x;
                }
            }
        });
    };
    widen(near, tmp, n[0], n[1]);
    widen(tmp, near, plane, n[2]);
}

/// For a free face at `p` inside the solids (component `a`): of the solids within half a cell
/// of `p` (`h`, m), the one whose surface normal `n` lies most along axis `a` (the first of
/// equals), `n` and its velocity along `n` (0 for a static one); `None` if none is that
/// near. The face keeps what a wall face keeps, [`free_slip`] of the liquid's splatted
/// velocity (the solid moves the liquid along its normal
/// only; a plate sliding under the water gives its x faces the water's own, and a curved wall
/// its normal motion and the liquid's along it), and in a corner between two solids the face
/// takes the one it faces (the wall behind a row of x faces inside a floor beside it).
fn inner_normal(
    posed: &Posed<'_>,
    boxes: far::Boxes<'_>,
    p: [f64; 3],
    a: usize,
    h: f64,
) -> Option<([f64; 3], f64)> {
    let mut best: Option<([f64; 3], f64)> = None;
    for s in 0..posed.solids.len() {
        if far::box_proves(boxes, s, p, 0.5 * h, 0.0) {
            continue;
        }
        let solid = posed.get(s);
        let (dist, g) = solid.distance_and_normal(p);
        if dist >= 0.5 * h || best.is_some_and(|(b, _)| g[a].abs() <= b[a].abs()) {
            continue;
        }
        let v = solid.velocity(p);
        best = Some((g, g[0] * v[0] + g[1] * v[1] + g[2] * v[2]));
    }
    best
}

/// The value a wall face `ijk` of component `a` of a static solid keeps: [`free_slip`] of the
/// liquid's splatted velocity there ([`liquid_at`]) along the solid's unit normal `g`, at rest.
fn at_rest(
    d: &GridDims,
    fields: (&[Vec<f32>; 3], &[Vec<FaceKind>; 3]),
    ijk: [usize; 3],
    a: usize,
    g: [f64; 3],
) -> f32 {
    let f = ijk[0] + d.face_n(a)[0] * (ijk[1] + d.face_n(a)[1] * ijk[2]);
    free_slip(liquid_at(d, fields, ijk, a, fields.0[a][f]), g, 0.0, a)
}

/// Free slip on a face of component `a`: the liquid's velocity `u` with its part along the
/// solid's unit normal `g` replaced by the solid's, `un`: `u_a - (u . g) g_a + un g_a`. (With
/// only `u_a` at hand, `(1 - g_a^2) u_a + un g_a` drops `-(sum_b u_b g_b) g_a` over the other
/// axes: liquid moving with a wall oblique to the grid then got a velocity across the motion,
/// `u_solid,x g_x g_y` on the y faces.)
fn free_slip(u: [f64; 3], g: [f64; 3], un: f64, a: usize) -> f32 {
    let along = u[0] * g[0] + u[1] * g[1] + u[2] * g[2];
    (u[a] + (un - along) * g[a]) as f32
}

/// The liquid's splatted velocity at the face `ijk` of component `a` (between cells
/// `ijk - e_a` and `ijk`): `ua` (the face's own) along `a`, and along each other axis `b` the
/// mean over the four `b` faces of those two cells of the fluid faces and the wall faces a
/// particle reached (the splat is 0 where none did), or, where there is none, of the other
/// faces a particle reached (between two solid cells, or two air cells); 0 if none. Those
/// only then: the particles in a tumbling solid's skin splat velocities there that are not
/// the liquid's, and taken with the others they made `scripts/fuzz_motion.py --brim
/// --inside` seed 20 (a sphere and a box tumbling in a brim-full tank) reach 380 m/s for a
/// frame (17 m/s without them); never taken, the moving sphere of
/// `water_carried_in_a_moving_sphere_stays_at_rest_in_it` stirred its water at 0.34 m/s.
fn liquid_at(
    d: &GridDims,
    (splat, kinds): (&[Vec<f32>; 3], &[Vec<FaceKind>; 3]),
    ijk: [usize; 3],
    a: usize,
    ua: f32,
) -> [f64; 3] {
    let mut u = [0.0; 3];
    u[a] = ua as f64;
    for b in (0..3).filter(|&b| b != a) {
        let m = d.face_n(b);
        // [liquid faces, faces between solid cells]: sum and count.
        let mut found = [(0.0f64, 0u32); 2];
        for back in [1, 0] {
            let mut cell = ijk;
            cell[a] -= back;
            for up in [0, 1] {
                let mut f = cell;
                f[b] += up;
                let g = f[0] + m[0] * (f[1] + m[1] * f[2]);
                let (k, v) = (kinds[b][g], splat[b][g]);
                let tier = match k {
                    FaceKind::Fluid => 0,
                    _ if v == 0.0 => continue,
                    FaceKind::Wall => 0,
                    FaceKind::Free => 1,
                };
                found[tier].0 += v as f64;
                found[tier].1 += 1;
            }
        }
        u[b] = match found {
            [(s, n), _] if n > 0 => s / n as f64,
            [_, (s, n)] if n > 0 => s / n as f64,
            _ => 0.0,
        };
    }
    u
}
