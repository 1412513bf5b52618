//! Solid obstacles in the stepper: the per-substep solid state and the particle push-out.
//!
//! Method (what is implemented; see README "Obstacles"):
//! - **Grid.** At each substep the solid signed distance is evaluated at every cell centre and
//!   every grid node at the substep's start time (static obstacles: once per run, the buffers
//!   are kept; beside moving ones, the static ones' part once, [`split`]; far from a moving
//!   solid, a lower bound from its world box that decides the same, [`far`]). The nodes give
//!   every MAC face its open fraction (`geometry::face_fractions`, Batty, Bertails & Bridson
//!   2007); the pressure solve uses them as variational weights
//!   (`pressure::system`: matrix `D^T W G`, fluxes `w u + (1 - w) u_solid`), so sloped and
//!   curved walls do not staircase and liquid at rest in them stays at rest. A cell whose
//!   centre is in solid and that holds no particle is labelled `Solid` (its faces are closed);
//!   a cell holding particles stays fluid whatever its centre, its faces carrying their
//!   fractions. A face the solids close completely (fraction 0: inside a wall, even one
//!   thinner than a cell between two liquid cells) becomes a wall face ([`SolidState::close_faces`])
//!   and keeps the solid's normal velocity through the projection and the extrapolation;
//!   moving obstacles also give each covered face their velocity ([`SolidState::wall_velocities`]),
//!   and a wall face's flux comes from its open fraction, its value from the liquid along
//!   the solid (free slip; static obstacles too since session 38: [`wall_faces`]).
//!   A face through which a fluid cell's particles would see air only across a wall thinner
//!   than a cell is sealed for the substep ([`super::thin_walls`]), and the density correction
//!   gives cells whose kernel is mostly solid their own rest density ([`super::rest_share`]).
//! - **Particles.** Water is held by the particles, decided from the signed distance at the
//!   particle, not from cell labels: after advection (and after the density correction) every
//!   particle's path from its position before the move to after is sampled against the
//!   distance at steps of at most a quarter cell; the particle stops at the last sample before
//!   the first one in solid, so it cannot tunnel through a wall thinner than a cell. Then any
//!   particle with distance below [`PUSHOUT_CELLS`] cells is moved along the distance gradient
//!   to that distance (Bridson 2015, sec. 7.? particle boundary handling), and its velocity's
//!   normal component relative to the solid is made non-negative (no inflow into the solid),
//!   also where the path check stopped it (a stopped particle kept moving into the wall).
//!   Where the domain's interior box then clamps the particle back towards the solid (a wedge
//!   between an obstacle and a domain wall, whose gradient points into the wall), the push-out
//!   continues along the wall ([`wedge`]). With static obstacles only the particles of the
//!   cells near a solid are visited (`hold.rs`: the cells a bound on the move cannot clear;
//!   the same bytes as visiting all).
//!
//! Every loop is per particle or per cell, writing disjoint outputs: the same for any thread
//! count. Poses are functions of time, so resume is exact. Buffers are allocated once
//! ([`SolidState::new`]); the position copy is resized only when the particle count grows.
//!
//! Layer 2 (sim): imports geometry only.

use super::cell_sort::SortedParticles;
use super::friction::FrictionFaces;
use super::mac_grid::{CellLabel, FaceKind, GridDims, SolidFaces};
use super::rest_share::ShareCells;
use super::thin_walls;
use crate::geometry::face_fractions::{FaceFractions, face_fractions_into};
use crate::geometry::solid::{PosedSolid, Solid};
use crate::geometry::transform::{Pose, RigidVelocity};
use rayon::prelude::*;
use std::sync::Arc;

pub use crate::geometry::solid::PUSHOUT_CELLS;
/// Largest step (in cells) of the anti-tunnelling path check.
const PATH_STEP_CELLS: f32 = 0.25;

/// In a shot with moving obstacles, a face whose open fraction is below this counts as
/// closed (a wall face moving with the solid). A moving solid's flux `(1 - w) u_solid` into
/// a cell nearly covered by it must leave through its other faces, which are nearly covered
/// too: the projection then drives the liquid through the open sliver of a face at about
/// `(1 - w) / w` times the solid's speed (456 m/s through a face 0.95% open, next to a box
/// moving at 1 m/s, on a violent test scene of two tumbling solids), and the run blew up.
/// Closed, the cell is sealed with the solid (its liquid is pushed out by the containment) or
/// joins a sealed pocket ([`super::pressure`]'s compatible right-hand side). Static solids
/// impose no flux, so shots without moving ones keep every fraction.
pub const MOVING_MIN_OPEN: f32 = 0.05;

/// The obstacles of a simulation: plain solids, compared by the key they were built from.
#[derive(Debug, Clone, Default)]
pub struct Obstacles {
    pub solids: Arc<Vec<Solid>>,
    /// What the solids were built from (e.g. the scene's obstacle JSON): equality of two sets.
    pub key: String,
}

impl PartialEq for Obstacles {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.solids.len() == other.solids.len()
    }
}

impl Obstacles {
    pub fn new(solids: Vec<Solid>, key: String) -> Self {
        Self {
            solids: Arc::new(solids),
            key,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.solids.is_empty()
    }
    /// Whether any obstacle moves.
    pub fn animated(&self) -> bool {
        self.solids.iter().any(|s| s.is_animated())
    }
}

/// Minimum signed distance and its gradient over `posed` at `p`.
#[inline]
fn nearest(posed: &Posed<'_>, p: [f64; 3]) -> (f64, [f64; 3], usize) {
    let mut best = (f64::INFINITY, [0.0; 3], 0);
    for i in 0..posed.solids.len() {
        let (d, g) = posed.get(i).distance_and_normal(p);
        if d < best.0 {
            best = (d, g, i);
        }
    }
    best
}

/// [`nearest`]'s distance (without the gradients).
#[inline]
fn nearest_distance(posed: &Posed<'_>, p: [f64; 3]) -> f64 {
    posed.min_distance(0..posed.solids.len(), p)
}

/// The solids at one time without a list of [`PosedSolid`]s to allocate: their poses and rigid
/// velocities live in [`SolidState::poses`], refreshed in place.
struct Posed<'a> {
    solids: &'a [Solid],
    poses: &'a [(Pose, RigidVelocity)],
}

impl Posed<'_> {
    fn get(&self, i: usize) -> PosedSolid<'_> {
        let (pose, vel) = self.poses[i];
        self.solids[i].posed(pose, vel)
    }

    /// The smallest distance at `p` over the solids `set` (a minimum: the same in any order
    /// or grouping).
    #[inline]
    fn min_distance(&self, set: impl IntoIterator<Item = usize>, p: [f64; 3]) -> f64 {
        (set.into_iter())
            .map(|i| self.get(i).signed_distance(p))
            .fold(f64::INFINITY, f64::min)
    }

    /// Whether every solid of `set` has its exact distance ([`Solid::distance_is_exact`]), so
    /// that [`Self::min_distance`] over them is 1-Lipschitz.
    fn exact(&self, set: impl IntoIterator<Item = usize>) -> bool {
        set.into_iter().all(|i| self.solids[i].distance_is_exact())
    }

    /// [`Self::min_distance`] of the banded distances.
    #[inline]
    fn min_banded(&self, set: impl IntoIterator<Item = usize>, p: [f64; 3]) -> f64 {
        (set.into_iter())
            .map(|i| self.get(i).signed_distance_banded(p))
            .fold(f64::INFINITY, f64::min)
    }
}

/// Per-run solid state of the stepper.
pub struct SolidState {
    obstacles: Obstacles,
    /// Signed distance at every cell centre (valid for `cell_time`).
    cell_phi: Vec<f32>,
    cell_time: Option<f64>,
    /// Signed distance at every grid node (cell corner, `n + 1` per axis), for `cell_time`.
    node_phi: Vec<f32>,
    /// Open fraction of every face (Batty et al. 2007), for `cell_time`.
    fractions: FaceFractions,
    /// The moving solids' velocity component on every face they (partly) cover (0 elsewhere;
    /// all 0 in shots with static solids only, whose wall faces' fluxes read it too).
    face_vel: [Vec<f32>; 3],
    /// On the covered faces between two solid cells ([`FaceKind::Free`]) beside the liquid,
    /// the free-slip velocity of the moving solids (theirs along their normal, the liquid's
    /// across it): what the extrapolation leaves on the faces it does not reach
    /// ([`Self::inner_velocities`], `wall_faces.rs`; 0 elsewhere).
    inner_vel: [Vec<f32>; 3],
    /// Shots with static solids only: the faces they cover and the solids' normal there,
    /// found once (`wall_faces.rs`).
    static_faces: Option<wall_faces::StaticFaces>,
    /// Shots with static solids only: the faces they close (open fraction 0), found once
    /// ([`Self::close_faces`]).
    closed_faces: Option<[Vec<u32>; 3]>,
    /// Per cell, 1 where a fluid cell lies within a cell (Chebyshev) of it, and its scratch
    /// (moving obstacles only; [`Self::wall_velocities`]).
    near_liquid: [Vec<u8>; 2],
    /// The friction of the solid nearest each face they (partly) cover (only when some
    /// obstacle has friction; 0 elsewhere).
    face_friction: [Vec<f32>; 3],
    /// Positions before the particle move (anti-tunnelling; with a [`Self::near`] set, only
    /// the slots of the cells in that set are written and read).
    prev: [Vec<f32>; 3],
    /// The cells whose particles the next [`Self::hold`] visits (static obstacles): those with
    /// `cell_phi - 0.9 h` below this distance, m (see [`Self::remember`]); `None`: every
    /// particle.
    near: Option<f64>,
    /// The time of the hold [`Self::near`] was found for.
    near_time: f64,
    /// The time of the positions in [`Self::prev`] (the move's start).
    prev_time: f64,
    /// Each solid that moves between `prev_time` and the hold's time: its poses at the two
    /// times, which carry a particle's start with it for the path check (`hold.rs`); `None`
    /// for the others. Refreshed in place by each hold.
    carry: Vec<Option<(Pose, Pose)>>,
    /// Each solid's pose and rigid velocity at `poses_time` (see [`Posed`]).
    poses: Vec<(Pose, RigidVelocity)>,
    /// Each solid's pose at a substep's start and its mean velocity over the substep, for the
    /// boundary condition ([`Self::wall_velocities`]; kept to avoid an allocation per substep).
    step_poses: Vec<(Pose, RigidVelocity)>,
    /// Each moving solid's world box at `poses_time` where the grids may hold a bound far
    /// from it ([`far`]; `None` elsewhere).
    boxes: Vec<Option<far::WorldBox>>,
    /// Each solid's [`far::box_slack`] (the containment's use of the boxes, `hold.rs`).
    slacks: Vec<Option<(f64, f64)>>,
    /// Beyond how many cells from those boxes the grids hold the bound ([`far::EXACT_CELLS`];
    /// infinite in tests that compare with exact grids).
    far_cells: f64,
    poses_time: f64,
    /// Faces sealed this substep ([`super::thin_walls`]): 1 per sealed face.
    sealed: [Vec<u8>; 3],
    sealed_any: bool,
    /// Static solids only: the faces a thin wall can seal, found once.
    thin_faces: Option<thin_walls::ThinFaces>,
    /// Each cell's kernel open share ([`super::rest_share`]) and the time it was computed for.
    share: Vec<f32>,
    share_time: Option<f64>,
    /// Moving obstacles: the time of the last [`Self::surface_share`], whose cells include the
    /// fluid cells of the density correction at that time (which then reuses it).
    surface_share_time: Option<f64>,
    /// Static and moving obstacles together: the static ones' part, computed once
    /// ([`split`]).
    split: Option<split::Split>,
    /// Moving obstacles: each cell's mark and the two search queues of [`skin_pockets`].
    pocket_mark: Vec<u8>,
    pocket_queue: Vec<u32>,
    pocket_fill: Vec<u32>,
    /// The cell face against gravity (`2 a + 1` for `+a`, `2 a` for `-a`, `a` the axis of
    /// gravity's largest component), which [`skin_pockets`] treats apart; `None` without
    /// gravity ([`Self::set_gravity`]).
    up: Option<usize>,
}

impl SolidState {
    pub fn new(obstacles: Obstacles, d: &GridDims) -> Self {
        let active = !obstacles.is_empty();
        let cells = if active { d.cells() } else { 0 };
        let nodes = if active {
            d.n.iter().map(|&m| m + 1).product()
        } else {
            0
        };
        let faces = |a: usize| if active { d.faces(a) } else { 0 };
        let moving = active && obstacles.animated();
        let moving_faces = |a: usize| if moving { d.faces(a) } else { 0 };
        let rough = obstacles.solids.iter().any(|s| s.friction() > 0.0);
        let rough_faces = |a: usize| if rough { d.faces(a) } else { 0 };
        let animated: Vec<bool> = obstacles.solids.iter().map(|s| s.is_animated()).collect();
        let split = split::Split::new(&animated, d);
        Self {
            obstacles,
            cell_phi: vec![f32::INFINITY; cells],
            cell_time: None,
            node_phi: vec![f32::INFINITY; nodes],
            fractions: FaceFractions {
                cells: d.n,
                open: std::array::from_fn(|a| vec![1.0; faces(a)]),
            },
            face_vel: std::array::from_fn(|a| vec![0.0; faces(a)]),
            inner_vel: std::array::from_fn(|a| vec![0.0; moving_faces(a)]),
            static_faces: None,
            closed_faces: None,
            near_liquid: std::array::from_fn(|_| vec![0; if moving { cells } else { 0 }]),
            face_friction: std::array::from_fn(|a| vec![0.0; rough_faces(a)]),
            prev: Default::default(),
            near: None,
            near_time: f64::NAN,
            prev_time: f64::NAN,
            carry: Vec::new(),
            poses: Vec::new(),
            step_poses: Vec::new(),
            boxes: Vec::new(),
            slacks: Vec::new(),
            far_cells: far::EXACT_CELLS,
            poses_time: f64::NAN,
            sealed: std::array::from_fn(|a| vec![0; faces(a)]),
            sealed_any: false,
            thin_faces: None,
            share: vec![1.0; cells],
            share_time: None,
            surface_share_time: None,
            split,
            pocket_mark: vec![0; if moving { cells } else { 0 }],
            pocket_queue: Vec::new(),
            pocket_fill: Vec::new(),
            up: None,
        }
        .with_poses()
    }

    /// Tells the solids which way is up: the face against `gravity` (m/s^2) along its largest
    /// component, for the air pockets beside moving solids ([`skin_pockets`]); zero gravity
    /// has none.
    pub fn set_gravity(&mut self, gravity: [f64; 3]) {
        let a = (0..3).fold(0, |m, a| {
            if gravity[a].abs() > gravity[m].abs() {
                a
            } else {
                m
            }
        });
        self.up = (gravity[a] != 0.0).then_some(2 * a + (gravity[a] < 0.0) as usize);
    }

    /// Sizes and fills [`Self::poses`] at time 0 (the only allocation of the list).
    fn with_poses(mut self) -> Self {
        self.poses = (self.obstacles.solids.iter())
            .map(|s| (s.motion().pose(0.0), s.motion().velocity(0.0)))
            .collect();
        self.step_poses = self.poses.clone();
        self.slacks = self.obstacles.solids.iter().map(far::box_slack).collect();
        self.carry = vec![None; self.obstacles.solids.len()];
        self.boxes = (self.obstacles.solids.iter().zip(&self.poses))
            .map(|(s, p)| far::far_box(s, &p.0))
            .collect();
        self.poses_time = 0.0;
        self
    }

    /// Refreshes the poses for time `t` in place (static solids keep theirs).
    fn set_poses(&mut self, t: f64) {
        if self.poses_time == t || !self.obstacles.animated() {
            return;
        }
        let each = self.poses.iter_mut().zip(self.boxes.iter_mut());
        for (s, (p, b)) in self.obstacles.solids.iter().zip(each) {
            *p = (s.motion().pose(t), s.motion().velocity(t));
            *b = far::far_box(s, &p.0);
        }
        self.poses_time = t;
    }

    pub fn active(&self) -> bool {
        !self.obstacles.is_empty()
    }

    /// Where the crowding thinning may move particles ([`super::crowding::Room`]): any
    /// interior cell without obstacles, cells clear of static ones, nowhere beside moving
    /// ones (their distances hold at the substep's start, the particles at its end).
    pub fn room(&self) -> super::crowding::Room<'_> {
        use super::crowding::Room;
        if !self.active() {
            Room::Anywhere
        } else if self.obstacles.animated() || self.cell_time.is_none() {
            Room::None
        } else {
            Room::Clear(&self.cell_phi)
        }
    }

    /// Evaluates the cell-centre distance at `t` (skipped for static obstacles after the first).
    fn update_cells(&mut self, d: &GridDims, t: f64) {
        if self.cell_time.is_some() && (!self.obstacles.animated() || self.cell_time == Some(t)) {
            return;
        }
        self.set_poses(t);
        let solids = &self.obstacles.solids[..];
        let posed = Posed {
            solids,
            poses: &self.poses,
        };
        let n = d.n;
        let (h, lo) = (d.h as f64, d.lower.map(|x| x as f64));
        let near = (&self.boxes[..], self.far_cells * h);
        if let Some(split) = &mut self.split {
            split.update(d, &posed, near, &mut self.cell_phi, &mut self.node_phi);
        } else {
            far::all_distances(d, &posed, near, &mut self.cell_phi, &mut self.node_phi);
        }
        face_fractions_into(&self.node_phi, n, &mut self.fractions);
        if self.obstacles.animated() {
            // See [`MOVING_MIN_OPEN`].
            for o in self.fractions.open.iter_mut() {
                o.par_iter_mut().with_min_len(4096).for_each(|w| {
                    if *w < MOVING_MIN_OPEN {
                        *w = 0.0;
                    }
                });
            }
        }
        if !self.face_friction[0].is_empty() {
            let (boxes, far) = ((&self.boxes[..], &self.slacks[..]), self.far_cells * h);
            for a in 0..3 {
                let m = d.face_n(a);
                let stride = [1, n[0], n[0] * n[1]][a];
                let (phi, open) = (&self.cell_phi, &self.fractions.open[a]);
                self.face_friction[a]
                    .par_chunks_mut(m[0])
                    .enumerate()
                    .for_each(|(row, out)| {
                        let (j, k) = (row % m[1], row / m[1]);
                        for (i, o) in out.iter_mut().enumerate() {
                            let ijk = [i, j, k];
                            let inside = ijk[a] > 0 && ijk[a] < n[a];
                            let c = i + n[0] * (j + n[1] * k);
                            let covered = open[i + m[0] * row] < 1.0
                                || (inside && (phi[c] < 0.0 || phi[c - stride] < 0.0));
                            *o = if covered {
                                let p: [f64; 3] = std::array::from_fn(|b| {
                                    let off = if b == a { 0.0 } else { 0.5 };
                                    lo[b] + (ijk[b] as f64 + off) * h
                                });
                                solids[posed.nearest_near(p, boxes, far)].friction()
                            } else {
                                0.0
                            };
                        }
                    });
            }
        }
        self.cell_time = Some(t);
    }

    /// The friction pass's obstacle data with the domain walls' friction `walls` (per face,
    /// x_min, x_max, ..., z_max).
    pub fn friction_faces(&self, walls: [f32; 6]) -> FrictionFaces<'_> {
        let active = self.active();
        FrictionFaces {
            walls,
            open: active.then_some(&self.fractions.open),
            obstacle: (!self.face_friction[0].is_empty()).then_some(&self.face_friction),
            solid_vel: (active && self.obstacles.animated()).then_some(&self.face_vel),
        }
    }

    /// The variational boundaries of the last [`Self::label_solid_cells`]: every face's open
    /// fraction and the solids' velocity per face (set by [`Self::wall_velocities`]; 0 for
    /// static solids). `None` without obstacles.
    pub fn faces(&self) -> Option<SolidFaces<'_>> {
        self.active().then_some(SolidFaces {
            open: &self.fractions.open,
            velocity: &self.face_vel,
        })
    }

    /// For moving obstacles, the velocity a free face inside a solid keeps where the
    /// extrapolation does not reach it (set by [`Self::wall_velocities`]); `None` otherwise
    /// (such faces keep 0, a static solid's).
    pub fn inner_velocities(&self) -> Option<&[Vec<f32>; 3]> {
        (self.active() && self.obstacles.animated()).then_some(&self.inner_vel)
    }

    /// Each cell's share of the density kernel open to particles at `t`
    /// ([`super::rest_share`]; after [`Self::label_solid_cells`] at `t`, with its `labels`:
    /// valid in the fluid cells); `None` without obstacles. Static obstacles: each cell computed
    /// once, the first time it is fluid.
    pub fn kernel_share(&mut self, d: &GridDims, t: f64, labels: &[CellLabel]) -> Option<&[f32]> {
        self.share_of(d, t, ShareCells::Fluid(labels))
    }

    /// [`Self::kernel_share`] valid in the fluid cells and their non-solid face neighbours:
    /// the ghost-fluid surface's rest density ([`super::ghost_fluid::fill_fraction`]).
    pub fn surface_share(&mut self, d: &GridDims, t: f64, labels: &[CellLabel]) -> Option<&[f32]> {
        self.share_of(d, t, ShareCells::FluidAndNeighbours(labels))
    }

    fn share_of(&mut self, d: &GridDims, t: f64, only: ShareCells<'_>) -> Option<&[f32]> {
        if !self.active() {
            return None;
        }
        let animated = self.obstacles.animated();
        let surface = matches!(only, ShareCells::FluidAndNeighbours(_));
        if animated && !surface && self.surface_share_time == Some(t) {
            // The ghost fluid's share at this time covers these fluid cells (same poses).
            return Some(&self.share);
        }
        self.surface_share_time = (animated && surface).then_some(t);
        if self.share_time.is_none() {
            // Static obstacles: every cell unknown (NaN) until it first holds liquid.
            self.share.fill(f32::NAN);
        }
        self.set_poses(t);
        let posed = Posed {
            solids: &self.obstacles.solids[..],
            poses: &self.poses,
        };
        let h = d.h as f64;
        let cap = (far::SHARE_CAP_CELLS + PUSHOUT_CELLS as f64) * h;
        let boxes = (&self.boxes[..], &self.slacks[..]);
        if let Some(split) = self.split.as_mut().filter(|_| animated) {
            split.share(
                d,
                &posed,
                (boxes, cap),
                8,
                (&self.cell_phi, only),
                &mut self.share,
            );
        } else {
            let all = 0..posed.solids.len();
            let phi = |p: [f64; 3]| posed.min_distance_capped(all.clone(), p, boxes, cap);
            let exact = posed.exact(0..posed.solids.len());
            super::rest_share::kernel_open_share(
                d,
                &self.cell_phi,
                &phi,
                (8, exact),
                only,
                !animated,
                &mut self.share,
            );
        }
        self.share_time = Some(t);
        Some(&self.share)
    }

    /// After [`Self::close_faces`]: seals the faces through which liquid would see the air on
    /// the far side of a wall thinner than a cell ([`super::thin_walls`]), for this substep
    /// (until [`Self::unseal_thin_walls`]).
    pub fn seal_thin_walls(
        &mut self,
        d: &GridDims,
        sp: &SortedParticles,
        labels: &[CellLabel],
        kinds: &mut [Vec<FaceKind>; 3],
    ) {
        if !self.active() {
            return;
        }
        let posed = Posed {
            solids: &self.obstacles.solids[..],
            poses: &self.poses,
        };
        let phi = |p: [f64; 3]| nearest_distance(&posed, p);
        let (cell_phi, node_phi) = (&self.cell_phi[..], &self.node_phi[..]);
        let w = thin_walls::Walls {
            d,
            cell_phi,
            node_phi,
            phi: &phi,
            sp,
            labels,
        };
        let (open, sealed) = (&mut self.fractions.open, &mut self.sealed);
        // Static solids: only the faces beside cells near them can seal, found once.
        let listed = (!self.obstacles.animated()).then(|| {
            (self.thin_faces).get_or_insert_with(|| thin_walls::ThinFaces::new(d, cell_phi))
        });
        let n = thin_walls::seal(&w, listed, kinds, open, sealed);
        self.sealed_any = n > 0;
    }

    /// Restores the geometric open fractions of the faces [`Self::seal_thin_walls`] sealed
    /// (after the last use of the fractions in a substep).
    pub fn unseal_thin_walls(&mut self, d: &GridDims) {
        if !self.sealed_any {
            return;
        }
        super::thin_walls::unseal(
            d,
            &self.node_phi,
            &mut self.fractions.open,
            &mut self.sealed,
        );
        self.sealed_any = false;
    }

    /// Labels every cell whose centre is in solid at `t` and that holds no liquid as `Solid`
    /// (a cell holding particles stays fluid: its faces carry their open fractions), and
    /// computes the faces' open fractions at `t`. With moving obstacles, the air pockets they
    /// shut in beside the liquid become fluid ([`skin_pockets`]).
    pub fn label_solid_cells(&mut self, d: &GridDims, t: f64, labels: &mut [CellLabel]) {
        if !self.active() {
            return;
        }
        self.update_cells(d, t);
        labels
            .par_iter_mut()
            .zip(self.cell_phi.par_iter())
            .with_min_len(4096)
            .for_each(|(l, &phi)| {
                if phi < 0.0 && *l != CellLabel::Fluid {
                    *l = CellLabel::Solid;
                }
            });
        if self.obstacles.animated() {
            self.fill_skin_pockets(d, labels);
        }
    }
}

mod far;
mod hold;
mod skin_pockets;
mod split;
mod wall_faces;
mod wedge;

#[cfg(test)]
mod tests;
