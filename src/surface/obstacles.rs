//! Liquid meshes that meet obstacles without a gap and without poking in (issue 11).
//!
//! A level set built from particles stands off every solid by about the particle radius: the
//! particles are kept a tenth of a cell out of the solid and their kernels fade before the
//! wall, so water in a glass would float inside it. The domain walls are handled by mirrored
//! particles and a clip ([`super::level_set`]); obstacles get the same two steps, with the
//! solid's signed distance (plain data: a function of the point, from the caller) in place of
//! the box, and three more (a pocket fill, the removal of films beyond thin walls and a snap):
//!
//! 1. **Extension into the solid.** Every particle closer to a solid than the level set's
//!    reach gets a mirror image, velocity with the normal component negated. The liquid's
//!    level set then continues into the solid as if the wall were a mirror, so next to the
//!    wall it is as deep as in the bulk and its surface meets the wall at a right angle (the
//!    ghost-particle treatment of solid boundaries in SPH surface reconstruction, and what the
//!    domain walls already do). The mirror is the *simulation's* wall, not the solid's
//!    surface: the simulation labels a cell whose centre is in a solid (and that holds no
//!    particle) solid and closes its faces, so its particles rest on that staircase of faces,
//!    up to half a cell (more on a slope) off the surface ([`sim_wall_offset`] finds it along
//!    the normal). Reflected across the surface itself, a particle `d` off it and its image
//!    were `2 d` apart, the staircase offset counted twice: on the base of the glass of
//!    `tests/obstacles_glass.rs` (2.5 mm below the faces at 1.25 cm) the lowest particles
//!    stand 3-9 mm above the base, their images 6-18 mm from them, more than the anisotropic
//!    kernels bridge, and the level set 2.5 mm above the base was air over much of it.
//!    Reflected across the simulation's wall, the images continue the particles' own layers
//!    and the sliver between that wall and the surface (open space the simulation's cells do
//!    not resolve) is liquid up to the clip. Only particles whose image across the surface
//!    (`x - 2 d n`, `d` the distance, `n` the outward unit normal) lies inside the solid get
//!    one: across a wall thinner than the reach (the glass: 1 cm wall; reach 1.24 cm with
//!    Zhu-Bridson, 3.1 cm anisotropic) an image lands in the air beyond the wall, where the
//!    clip leaves it, and made a film of liquid outside the glass (anisotropic mesh 44% over
//!    the volume of the particles seeded in the glass, Zhu-Bridson 3%); the image across the
//!    simulation's wall lies between the particle and that one.
//! 2. **Clip at the surface.** `phi = max(phi, -d + eps)` at every level-set point: inside the
//!    solid (`d < 0`) the liquid is cut off exactly at the solid's surface, so the mesh's
//!    contact face lies on the solid and no vertex pokes in (to the mesh sampling: marching
//!    cubes interpolates linearly, so a vertex is on the zero set of the linear interpolant
//!    of `phi`, within a small fraction of a surface cell of the solid for a wall that is
//!    smooth on the surface grid's scale).
//! 3. **Enclosed pockets.** Air points within one simulation cell of a solid that form a set
//!    enclosed by liquid and solid (no neighbour, diagonals included, in open air or outside
//!    the allocated blocks) are filled up to the solid's surface ([`fill_pockets`]). The
//!    simulation has no air there: its cells along the solid hold particles, so they are
//!    fluid cells, full in the pressure solve; the pocket is a gap in the particles'
//!    sampling (a cell of the glass's bottom layer holds 2 to 13 particles at a seeding of 8,
//!    and one holding a few left its lowest particles 9 mm above the base). Air that reaches open
//!    air (under a droplet above the base, a gap along a wall up to the free surface) is
//!    left alone, except where the simulation itself is full of liquid ([`fill_interior`],
//!    first): air points in a simulation cell that holds particles and whose 26 neighbours
//!    all hold particles or are solid, or in the sliver between the simulation's wall and
//!    the solid under such a cell, are filled whatever they connect to. A void under the
//!    glass's liquid whose air ran along the side wall up to the free surface left a bottom
//!    vertex 6.4-6.8 mm above the base at 4 (or, with another smoother factor, 10) of the
//!    frames 30-60 of the settling test; the flood fill alone cannot tell that channel from
//!    open air, the simulation's cells can (a gap along a wall near the free surface lies in
//!    cells next to empty ones and stays).
//! 4. **Films beyond a thin wall** (session 39). A particle's kernel reaches farther than a
//!    thin wall is thick (3 cm with the default `anisotropic` method, 3 times the glass's
//!    wall), and the clip only cuts the liquid where it lies *inside* the solid: past the wall
//!    the kernel left a film of liquid on the glass's outside, which the snap then laid onto
//!    the outer surface (528 vertices there in frame 4 of `scenes/glass.json`, flecks of water
//!    on a rendered glass). Every connected set of liquid points within the reach of a solid
//!    ([`NEAR`], 26-neighbourhood) that touches no other liquid and has no point in or beside
//!    (six face neighbours) a simulation cell holding a particle is air ([`drop_films`]): the
//!    liquid is the particles, and a piece with none of them in reach of its own cells is a
//!    kernel's echo through a solid. Liquid that touches its particles' cells stays, however
//!    thin.
//! 5. **Snap.** The clip's kink lies between grid points, so marching cubes' linear
//!    interpolation leaves the contact face up to a fraction of a surface cell off the solid
//!    (measured: 0.3-3 mm on 6.25 mm surface cells in the glass test). After smoothing, every
//!    vertex closer to a solid than one surface cell (or inside it) is moved onto the solid's
//!    surface along the gradient (two Newton steps on the signed distance): the contact face
//!    lies on the solid and no vertex is left inside it.
//!
//! Layer 2 (surface): imports the level set of this stage and the particle type only.

use super::level_set::{LevelSet, Params};
use crate::mesh::TriMesh;
use crate::particles::Particles;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU8, Ordering};

/// The solids' signed distance at a point (m, negative inside a solid) and its unit gradient
/// (the outward normal), for the frame being meshed.
pub type SolidDistance<'a> = &'a (dyn Fn([f64; 3]) -> (f64, [f64; 3]) + Sync);

/// The simulation's cells (a [`crate::geometry::Domain`]'s grid): lower corner and cell size,
/// m. Where the simulation put its wall next to a solid is read from them
/// ([`sim_wall_offset`]).
#[derive(Debug, Clone, Copy)]
pub struct SimCells {
    pub lower: [f64; 3],
    pub h: f64,
    /// Cells per axis, the domain's wall layer included.
    pub n: [usize; 3],
}

/// How far (m) from the solid's surface point `y` along the outward normal `n` the
/// simulation's liquid begins: the distance along the ray `y + t n` to the first simulation
/// cell whose centre is out of every solid (`sd >= 0`), or that holds the particle `x` itself
/// (at `t = d`, so the result is at most `d`). The simulation labels a cell whose centre is in
/// a solid and that holds no particle solid and closes its faces, so its particles rest on that
/// staircase of faces, up to half a cell (more on a slope) off the surface: on the glass base of
/// `tests/obstacles_glass.rs` (top at z = 1 cm, faces at 1.25 cm) 2.5 mm. Cells are walked in
/// the order the ray enters them (Amanatides & Woo 1987), at most 8.
pub fn sim_wall_offset(
    y: [f64; 3],
    n: [f64; 3],
    d: f64,
    x: [f64; 3],
    cells: SimCells,
    sd: SolidDistance<'_>,
) -> f64 {
    let h = cells.h;
    let cell_of = |q: [f64; 3]| -> [i64; 3] {
        std::array::from_fn(|a| ((q[a] - cells.lower[a]) / h).floor() as i64)
    };
    let own = cell_of(x);
    let nudge = 1e-6 * h;
    let mut t = 0.0f64;
    for _ in 0..8 {
        if t >= d {
            return d;
        }
        let c = cell_of(std::array::from_fn(|a| y[a] + (t + nudge) * n[a]));
        let centre: [f64; 3] = std::array::from_fn(|a| cells.lower[a] + (c[a] as f64 + 0.5) * h);
        if c == own || sd(centre).0 >= 0.0 {
            return t;
        }
        // Where the ray leaves cell `c`.
        let mut next = f64::INFINITY;
        for a in 0..3 {
            let face = match n[a] {
                v if v > 0.0 => (c[a] + 1) as f64,
                v if v < 0.0 => c[a] as f64,
                _ => continue,
            };
            next = next.min((cells.lower[a] + face * h - y[a]) / n[a]);
        }
        if !next.is_finite() {
            return t.min(d);
        }
        t = next.max(t + nudge);
    }
    t.min(d)
}

/// `particles` with a mirror image across the simulation's wall next to the nearest solid of
/// every particle closer than `reach` to it (see the module docs); `None` when no particle is
/// that close.
pub fn with_mirrors(
    particles: &Particles,
    reach: f64,
    cells: SimCells,
    sd: SolidDistance<'_>,
) -> Option<Particles> {
    let n = particles.len();
    let mirrors: Vec<Option<([f32; 3], [f32; 3])>> = (0..n)
        .into_par_iter()
        .with_min_len(1024)
        .map(|i| {
            let x = particles.position(i).map(|c| c as f64);
            let (d, g) = sd(x);
            if !d.is_finite() || d >= reach {
                return None;
            }
            // An image beyond a wall thinner than the reach (out of the solid's far side)
            // would be liquid in the air outside it: only particles whose image across the
            // solid's surface lies inside the solid get one.
            let across: [f64; 3] = std::array::from_fn(|a| x[a] - 2.0 * d * g[a]);
            let beyond = sd(across).0;
            if beyond.is_nan() || beyond >= 0.0 {
                return None;
            }
            // Reflected across the simulation's wall instead, which lies `w` off the surface
            // (the image then lies between the particle and `across`, on the near side).
            let y: [f64; 3] = std::array::from_fn(|a| x[a] - d * g[a]);
            let w = sim_wall_offset(y, g, d, x, cells, sd);
            let image: [f64; 3] = std::array::from_fn(|a| x[a] - 2.0 * (d - w) * g[a]);
            let v = particles.velocity(i).map(|c| c as f64);
            let vn: f64 = (0..3).map(|a| v[a] * g[a]).sum();
            Some((
                image.map(|c| c as f32),
                std::array::from_fn(|a| (v[a] - 2.0 * vn * g[a]) as f32),
            ))
        })
        .collect();
    if mirrors.iter().all(|m| m.is_none()) {
        return None;
    }
    let mut out = particles.clone();
    for (p, v) in mirrors.into_iter().flatten() {
        for a in 0..3 {
            out.pos[a].push(p[a]);
            out.vel[a].push(v[a]);
        }
    }
    Some(out)
}

/// What [`clip`] found at each level-set point (one byte per point, block-major like `phi`):
/// liquid (`phi <= 0` after the clip), solid (closer to a solid than the clip's `eps`, or
/// inside one: air by the clip), a pocket candidate (air in the liquid region within `band`
/// of a solid) or open air (everything else: farther from every solid, outside the liquid
/// region, or a distance that is not a number).
pub const LIQUID: u8 = 0;
pub const SOLID: u8 = 1;
pub const POCKET: u8 = 2;
pub const OPEN: u8 = 3;
/// Liquid within the level set's reach of a solid, where a particle's kernel may have reached
/// across a thin wall ([`drop_films`]); liquid to every other step.
pub const NEAR: u8 = 5;

/// The clip `phi = max(phi, -d + eps)` at every point of the level set (see the module docs).
/// Returns each point's class ([`LIQUID`] or [`NEAR`], [`SOLID`], [`POCKET`] within `band` of
/// a solid, [`OPEN`]) for [`fill_pockets`] and [`drop_films`].
pub fn clip(ls: &mut LevelSet, p: &Params, sd: SolidDistance<'_>, band: f64) -> Vec<u8> {
    let (eps, reach) = (1e-4 * p.cell, p.reach());
    let mut class = vec![OPEN; ls.phi.len()];
    each_point(ls, &mut class, p.cell, |q, x, c| {
        let d = sd(q).0;
        let solid = (eps - d) as f32;
        if solid > *x {
            *x = solid;
        }
        let in_region = (0..3).all(|a| q[a] >= p.region_lo[a] && q[a] <= p.region_hi[a]);
        *c = if *x <= 0.0 {
            if d < reach { NEAR } else { LIQUID }
        } else if d.is_nan() || !in_region {
            OPEN
        } else if d < eps {
            SOLID
        } else if d < band {
            POCKET
        } else {
            OPEN
        };
        0
    });
    class
}

/// Runs `f(q, phi, class)` at every point of `ls` (`q` its position, m, on the lattice of
/// spacing `h`) with its entries of `ls.phi` and `class`, in parallel by blocks; returns the
/// sum of what `f` returns.
fn each_point(
    ls: &mut LevelSet,
    class: &mut [u8],
    h: f64,
    f: impl Fn([f64; 3], &mut f32, &mut u8) -> usize + Sync,
) -> usize {
    use super::sparse_grid::{B, BP};
    let g = &ls.grid;
    ls.phi
        .par_chunks_mut(BP)
        .zip(class.par_chunks_mut(BP))
        .enumerate()
        .map(|(s, (phi, class))| {
            let bc = g.coords(g.blocks[s]);
            let first: [i64; 3] = std::array::from_fn(|a| g.origin[a] + bc[a] * B as i64);
            let mut sum = 0;
            for (k, (x, c)) in phi.iter_mut().zip(class.iter_mut()).enumerate() {
                let l = [k % B, (k / B) % B, k / (B * B)];
                let q: [f64; 3] = std::array::from_fn(|a| (first[a] + l[a] as i64) as f64 * h);
                sum += f(q, x, c);
            }
            sum
        })
        .sum()
}

/// Fills the air pockets enclosed by liquid and solid within `band` of a solid (see the module
/// docs, step 3): every connected set of [`POCKET`] points (26-neighbourhood) none of whose
/// points has an [`OPEN`] neighbour or a neighbour outside the allocated blocks (air) becomes
/// liquid up to the solid's surface, `phi = min(phi, eps - d)` (the clip's own formula,
/// negative there, so the contact face stays where the clip puts it). Serial, in block order;
/// which points are filled is a property of the sets, the same for any thread count. Returns
/// the number of points filled.
pub fn fill_pockets(
    ls: &mut LevelSet,
    class: &mut [u8],
    p: &Params,
    sd: SolidDistance<'_>,
) -> usize {
    /// A pocket point already queued.
    const SEEN: u8 = 4;
    let eps = 1e-4 * p.cell;
    let mut filled = 0;
    let open = |c: Option<u8>| matches!(c, None | Some(OPEN));
    each_set(
        ls,
        class,
        (POCKET, SEEN),
        open,
        |ls, class, members, open| {
            if open {
                return;
            }
            for &i in members {
                let q = point_coords(&ls.grid, i).map(|g| g as f64 * p.cell);
                ls.phi[i] = ls.phi[i].min((eps - sd(q).0) as f32);
                class[i] = LIQUID;
            }
            filled += members.len();
        },
    );
    filled
}

/// The lattice coordinates of level-set point `i` (block-major, as `phi`).
fn point_coords(g: &super::sparse_grid::SparseGrid, i: usize) -> [i64; 3] {
    use super::sparse_grid::{B, BP};
    let bc = g.coords(g.blocks[i / BP]);
    let k = i % BP;
    let l = [k % B, (k / B) % B, k / (B * B)];
    std::array::from_fn(|a| g.origin[a] + bc[a] * B as i64 + l[a] as i64)
}

/// Each connected set (26-neighbourhood) of the points of class `kind`, in block order (its
/// points marked `seen`): `each(ls, class, points, flagged)`, `flagged` whether `flag` holds
/// for the class of any of the set's neighbours (`None`: outside the allocated blocks). Serial;
/// the sets, and so what `each` does, are the same for any thread count.
fn each_set(
    ls: &mut LevelSet,
    class: &mut [u8],
    (kind, seen): (u8, u8),
    flag: impl Fn(Option<u8>) -> bool,
    mut each: impl FnMut(&mut LevelSet, &mut [u8], &[usize], bool),
) {
    let mut stack = Vec::new();
    let mut members = Vec::new();
    for start in 0..class.len() {
        if class[start] != kind {
            continue;
        }
        class[start] = seen;
        stack.push(start);
        members.clear();
        let mut flagged = false;
        while let Some(i) = stack.pop() {
            members.push(i);
            let c = point_coords(&ls.grid, i);
            for o in (0..27).filter(|&o| o != 13) {
                let n = [c[0] + o % 3 - 1, c[1] + (o / 3) % 3 - 1, c[2] + o / 9 - 1];
                let j = ls.locate(n);
                flagged |= flag(j.map(|j| class[j]));
                if let Some(j) = j
                    && class[j] == kind
                {
                    class[j] = seen;
                    stack.push(j);
                }
            }
        }
        each(ls, class, &members, flagged);
    }
}

/// Removes liquid that a particle's kernel put on the far side of a thin wall (see the module
/// docs, step 4): every connected set of [`NEAR`] points (26-neighbourhood) none of whose
/// points touches other liquid ([`LIQUID`]: farther from the solids, or filled) and none of
/// which lies in or beside (six face neighbours) a simulation cell holding a particle becomes
/// air, `phi = max(phi, eps)`. Serial, in block order, like [`fill_pockets`]; which points are
/// removed is a property of the sets, the same for any thread count. Returns how many.
pub fn drop_films(
    ls: &mut LevelSet,
    class: &mut [u8],
    p: &Params,
    cells: SimCells,
    occ: &[AtomicU8],
) -> usize {
    /// A near-liquid point already queued.
    const SEEN: u8 = 6;
    /// A cell and its six face neighbours, as offsets `o` of the 3 x 3 x 3 block.
    const FACE_NEIGHBOURS: [i64; 7] = [4, 10, 12, 13, 14, 16, 22];
    let eps = (1e-4 * p.cell) as f32;
    // Whether the simulation cell holding point `i`, or one of its six face neighbours, holds
    // a particle.
    let beside_particles = |ls: &LevelSet, i: usize| {
        let c = cells.cell_of(point_coords(&ls.grid, i).map(|g| g as f64 * p.cell));
        FACE_NEIGHBOURS.iter().any(|&o| {
            let nb = [c[0] + o % 3 - 1, c[1] + (o / 3) % 3 - 1, c[2] + o / 9 - 1];
            cells
                .index(nb)
                .is_some_and(|j| occ[j].load(Ordering::Relaxed) & OCCUPIED != 0)
        })
    };
    let mut dropped = 0;
    let liquid = |c: Option<u8>| c == Some(LIQUID);
    each_set(
        ls,
        class,
        (NEAR, SEEN),
        liquid,
        |ls, class, members, touches| {
            let anchored = touches || members.iter().any(|&i| beside_particles(ls, i));
            for &i in members {
                class[i] = if anchored { LIQUID } else { OPEN };
                if !anchored {
                    ls.phi[i] = ls.phi[i].max(eps);
                }
            }
            if !anchored {
                dropped += members.len();
            }
        },
    );
    dropped
}

/// Moves every vertex of `mesh` within `band` of a solid (or inside one) onto the solid's
/// surface (see the module docs).
pub fn snap(mesh: &mut TriMesh, band: f64, sd: SolidDistance<'_>) {
    mesh.positions
        .par_iter_mut()
        .with_min_len(1024)
        .for_each(|v| {
            let mut p = v.map(|c| c as f64);
            let (d0, _) = sd(p);
            if !d0.is_finite() || d0 >= band {
                return;
            }
            for _ in 0..2 {
                let (d, g) = sd(p);
                for a in 0..3 {
                    p[a] -= d * g[a];
                }
            }
            *v = p.map(|c| c as f32);
        });
}

/// One byte per simulation cell (x fastest), bit 0 set where a particle lies: the
/// simulation's fluid cells. [`fill_interior`] caches in the other bits whether a cell is
/// interior. A byte a cell of the domain, per meshed frame with obstacles: next to the
/// simulation's own grids (tens of bytes a cell) it does not bound a bake's memory.
pub fn occupancy(particles: &Particles, cells: SimCells) -> Vec<AtomicU8> {
    let [nx, ny, nz] = cells.n;
    let occ: Vec<AtomicU8> = (0..nx * ny * nz).map(|_| AtomicU8::new(0)).collect();
    (0..particles.len())
        .into_par_iter()
        .with_min_len(4096)
        .for_each(|i| {
            let x = particles.position(i);
            if let Some(c) = cells.index(cells.cell_of(x.map(|c| c as f64))) {
                // A set: the same bits whichever thread stores first.
                occ[c].store(OCCUPIED, Ordering::Relaxed);
            }
        });
    occ
}

/// [`occupancy`]'s bits: a particle in the cell; the cell known interior; known not; its
/// centre known in a solid; known not.
const OCCUPIED: u8 = 1;
const INTERIOR: u8 = 2;
const NOT_INTERIOR: u8 = 4;
const SOLID_CENTRE: u8 = 8;
const OPEN_CENTRE: u8 = 16;

/// Whether cell `i` (`c`) holds no particle and has its centre in a solid: a cell the
/// simulation labels solid. Cached in `occ` (many points and neighbours ask of one cell).
fn solid_cell(
    c: [i64; 3],
    i: usize,
    cells: SimCells,
    occ: &[AtomicU8],
    sd: SolidDistance<'_>,
) -> bool {
    let bits = occ[i].load(Ordering::Relaxed);
    if bits & OCCUPIED != 0 {
        return false;
    }
    if bits & (SOLID_CENTRE | OPEN_CENTRE) != 0 {
        return bits & SOLID_CENTRE != 0;
    }
    let yes = sd(cells.centre(c)).0 < 0.0;
    // A function of the solid: the same whichever task caches it.
    occ[i].fetch_or(
        if yes { SOLID_CENTRE } else { OPEN_CENTRE },
        Ordering::Relaxed,
    );
    yes
}

impl SimCells {
    /// The cell holding `q` (may be out of the grid).
    fn cell_of(&self, q: [f64; 3]) -> [i64; 3] {
        std::array::from_fn(|a| ((q[a] - self.lower[a]) / self.h).floor() as i64)
    }

    /// The centre of cell `c`.
    fn centre(&self, c: [i64; 3]) -> [f64; 3] {
        std::array::from_fn(|a| self.lower[a] + (c[a] as f64 + 0.5) * self.h)
    }

    /// Cell `c`'s index if it lies inside the domain and off its wall layer (the one-cell
    /// solid layer on each side, which no particle holds).
    fn index(&self, c: [i64; 3]) -> Option<usize> {
        let [nx, ny, nz] = self.n.map(|n| n as i64);
        let inside = (0..3).all(|a| c[a] >= 1 && c[a] < [nx, ny, nz][a] - 1);
        inside.then(|| (c[0] + nx * (c[1] + ny * c[2])) as usize)
    }
}

/// Whether simulation cell `c` is interior liquid: it holds particles and each of its 26
/// neighbours holds particles or is solid (its centre in a solid, as the simulation labels
/// a cell without particles). A neighbour in the domain's wall layer counts as neither (the
/// domain walls have their own mirrors and clip). Cached in `occ`.
fn interior(c: [i64; 3], cells: SimCells, occ: &[AtomicU8], sd: SolidDistance<'_>) -> bool {
    let Some(i) = cells.index(c) else {
        return false;
    };
    let bits = occ[i].load(Ordering::Relaxed);
    if bits & OCCUPIED == 0 {
        return false;
    }
    if bits & (INTERIOR | NOT_INTERIOR) != 0 {
        return bits & INTERIOR != 0;
    }
    let yes = (0..27).filter(|&o| o != 13).all(|o| {
        let nb = [c[0] + o % 3 - 1, c[1] + (o / 3) % 3 - 1, c[2] + o / 9 - 1];
        cells.index(nb).is_some_and(|j| {
            occ[j].load(Ordering::Relaxed) & OCCUPIED != 0 || solid_cell(nb, j, cells, occ, sd)
        })
    });
    // A function of the particles and the solid: the same whichever task caches it.
    occ[i].fetch_or(if yes { INTERIOR } else { NOT_INTERIOR }, Ordering::Relaxed);
    yes
}

/// Fills every [`POCKET`] point that lies in interior liquid of the simulation (see the module
/// docs, step 3): in a simulation cell holding particles whose neighbours all hold particles
/// or are solid ([`interior`]), or in the sliver between the simulation's wall and the solid,
/// below such a cell (a point in a cell the simulation labels solid, the cell one simulation
/// cell out along the solid's normal). The simulation has no air there, whether or not the
/// particles' sampling gap reaches open air elsewhere (along a wall up to the free surface: the
/// flood of [`fill_pockets`] then leaves it). `phi = min(phi, eps - d)` as there. Returns the
/// number of points filled.
pub fn fill_interior(
    ls: &mut LevelSet,
    class: &mut [u8],
    p: &Params,
    sd: SolidDistance<'_>,
    cells: SimCells,
    occ: &[AtomicU8],
) -> usize {
    let eps = 1e-4 * p.cell;
    each_point(ls, class, p.cell, |q, x, c| {
        if *c != POCKET {
            return 0;
        }
        let mut cell = cells.cell_of(q);
        let mut at = None;
        let solid = match cells.index(cell) {
            Some(i) => solid_cell(cell, i, cells, occ, sd),
            None => sd(cells.centre(cell)).0 < 0.0,
        };
        if solid {
            let (d, n) = sd(q);
            cell = cells.cell_of(std::array::from_fn(|a| q[a] + cells.h * n[a]));
            at = Some(d);
        }
        if !interior(cell, cells, occ, sd) {
            return 0;
        }
        let d = at.unwrap_or_else(|| sd(q).0);
        *x = x.min((eps - d) as f32);
        *c = LIQUID;
        1
    })
}
