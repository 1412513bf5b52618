//! Solid obstacles: a shape, a scale, a (possibly keyframed) rigid pose and which side the
//! liquid is on, queried as a signed distance, its gradient and the solid's velocity.
//!
//! **Sign.** [`Solid::signed_distance`] is negative in solid material and positive where liquid
//! may be. With `liquid: outside` (a pillar, a paddle, a glass made as a closed shell) that is
//! the shape's own signed distance; with `liquid: inside` (a tank, a sphere container, a pipe)
//! it is negated, so the shape's interior is the liquid's space and everything outside is wall.
//!
//! **Frames.** Scale is applied first, in the body frame, then the rigid pose ([`Motion`]).
//! A query at `(p, t)` maps `p` into the body frame with the inverse pose at `t` (no rebuild per
//! substep), evaluates there and rotates the gradient back. Distances are preserved by the rigid
//! part, so they are exact wherever the scaled shape's distance is exact:
//! - box: exact for any per-axis scale (the scale is folded into its corners);
//! - sphere and cylinder: exact for a uniform scale; for a per-axis scale the shape is
//!   evaluated in unscaled coordinates and multiplied by the smallest scale factor, a lower
//!   bound of the true distance with the exact sign (lengths shrink by at most that factor when
//!   unscaling), so the solid is never reported farther away than it is;
//! - mesh: the scale is applied to the vertices before the body-frame grid is built once
//!   ([`MeshShape::build`]), so any scale is exact up to the grid sampling: exact distance at the
//!   grid nodes within the band, trilinear in between (see [`super::mesh_sdf`]); beyond the
//!   band a lower bound outside and the exact distance inside ([`MeshShape::distance`]).
//!
//! Analytic distances (Quilez's box and capped-cylinder forms, derived here as a 2D box in the
//! cylinder's radial/axial coordinates) have closed-form gradients; the mesh gradient is that of
//! the trilinear interpolant. Velocities are the rigid-body field of [`Motion::velocity`].

use super::bvh::Bvh;
use super::mesh_io::IndexedMesh;
use super::mesh_sdf::{GridSdf, GridSpec, mesh_sdf};
use super::transform::{Motion, Pose, RigidVelocity};
use std::sync::Arc;

/// Distance (in cells) particles are kept from solid surfaces: the stepper pushes particles out
/// to it and emitters seed no particle closer.
pub const PUSHOUT_CELLS: f32 = 0.1;

/// Largest body-frame grid for one mesh obstacle, in nodes (4 bytes each).
pub const MAX_MESH_GRID_NODES: usize = 1 << 27;

/// Which side of the shape the liquid is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Liquid {
    /// The shape is solid; liquid flows around it.
    #[default]
    Outside,
    /// The shape is a container: liquid inside, solid everywhere outside.
    Inside,
}

/// A mesh obstacle's body-frame data: its (scaled) BVH and sampled signed distance.
#[derive(Debug, Clone)]
pub struct MeshShape {
    pub bvh: Bvh,
    pub sdf: GridSdf,
}

/// An obstacle's shape in its own (unscaled) coordinates.
#[derive(Debug, Clone)]
pub enum Shape {
    Box {
        min: [f64; 3],
        max: [f64; 3],
    },
    Sphere {
        centre: [f64; 3],
        radius: f64,
    },
    /// A capped cylinder between the centres of its two end caps.
    Cylinder {
        a: [f64; 3],
        b: [f64; 3],
        radius: f64,
    },
    /// Built with [`MeshShape::build`] (the scale already applied).
    Mesh(Arc<MeshShape>),
}

/// A shape, transform or grid that cannot be used, naming the field and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SolidError {
    #[error("{field} = {value}: must be a finite number greater than 0; fix: give a positive size")]
    NotPositive { field: &'static str, value: f64 },
    #[error("{field} is not finite; fix: give finite numbers")]
    NotFinite { field: &'static str },
    #[error("box min {min:?} is not below max {max:?} on every axis; fix: swap or widen them")]
    EmptyBox { min: [f64; 3], max: [f64; 3] },
    #[error("cylinder end caps are the same point {0:?}; fix: give two different cap centres")]
    ZeroLengthCylinder([f64; 3]),
    #[error(
        "the mesh spans {dims:?} grid nodes at cell size {spacing}, more than {max}; fix: scale it down or use a coarser domain cell_size"
    )]
    MeshGridTooLarge {
        dims: [usize; 3],
        spacing: f64,
        max: usize,
    },
}

fn check_finite(field: &'static str, v: &[f64]) -> Result<(), SolidError> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(SolidError::NotFinite { field })
    }
}

fn check_positive(field: &'static str, value: f64) -> Result<(), SolidError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(SolidError::NotPositive { field, value })
    }
}

impl MeshShape {
    /// Scales `mesh` (per axis) into the body frame and samples its signed distance on a grid of
    /// `spacing` covering it with `band_cells + 2` cells to spare.
    pub fn build(
        mesh: &IndexedMesh,
        scale: [f64; 3],
        spacing: f64,
        band_cells: f64,
    ) -> Result<MeshShape, SolidError> {
        check_positive("cell size", spacing)?;
        for s in scale {
            check_positive("scale", s)?;
        }
        let positions: Vec<[f64; 3]> = mesh
            .positions
            .iter()
            .map(|p| [0, 1, 2].map(|a| p[a] * scale[a]))
            .collect();
        let scaled = IndexedMesh {
            positions,
            triangles: mesh.triangles.clone(),
        };
        let (lo, hi) = scaled.bounds();
        let pad = (band_cells + 2.0) * spacing;
        let mut dims = [0usize; 3];
        let mut origin = [0.0; 3];
        let mut total = 1usize;
        for a in 0..3 {
            let n = ((hi[a] - lo[a] + 2.0 * pad) / spacing).ceil() + 1.0;
            dims[a] = if n.is_finite() && n < 1e9 {
                n as usize
            } else {
                usize::MAX / 4
            };
            origin[a] = lo[a] - pad;
            total = total.saturating_mul(dims[a]);
        }
        if total > MAX_MESH_GRID_NODES {
            return Err(SolidError::MeshGridTooLarge {
                dims,
                spacing,
                max: MAX_MESH_GRID_NODES,
            });
        }
        let bvh = Bvh::build(&scaled.positions, &scaled.triangles);
        let grid = GridSpec {
            origin,
            spacing,
            dims,
        };
        let sdf = mesh_sdf(&bvh, &grid, band_cells);
        Ok(MeshShape { bvh, sdf })
    }
}

impl MeshShape {
    /// Signed distance and unit gradient at body-frame point `q`: the trilinear interpolant of
    /// the grid where it is within the band. Farther outside the mesh, the grid's clamped value
    /// (plus the distance to the grid when beyond it): a lower bound of the true distance, which
    /// is all that far points need, at the cost of a grid lookup. Deeper inside than the band,
    /// the exact distance to the nearest triangle (a BVH query, rare: only penetrating points)
    /// with the gradient pointing out through that triangle, so a point deep in the solid still
    /// has a direction out.
    pub fn distance(&self, q: [f64; 3]) -> (f64, [f64; 3]) {
        let (d, g) = self.sdf.sample(q);
        if self.within_band(d) {
            let l = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
            return (d, if l > 0.0 { g.map(|c| c / l) } else { g });
        }
        let Some(hit) = self.bvh.closest(q, f64::INFINITY, None) else {
            return (d, [0.0; 3]);
        };
        let dist = hit.dist2.sqrt();
        let g = if dist > 0.0 {
            [0, 1, 2].map(|a| (hit.point[a] - q[a]) / dist)
        } else {
            [0.0; 3]
        };
        (-dist, g)
    }

    /// [`Self::distance`] without the gradient and without the exact query deep inside: the
    /// grid's value, clamped at minus the band there (the sign is right, the magnitude a bound).
    /// For grids of distances that only need the sign away from the surface (cell labels, face
    /// fractions): no BVH query at all.
    pub fn distance_banded(&self, q: [f64; 3]) -> f64 {
        self.sdf.sample(q).0
    }

    /// [`Self::distance`]'s value without a BVH query: `None` deeper inside than the band,
    /// where that value is the exact distance to the nearest triangle, at most 0.
    pub fn distance_unless_deep(&self, q: [f64; 3]) -> Option<f64> {
        let d = self.sdf.sample(q).0;
        self.within_band(d).then_some(d)
    }

    /// Whether the grid's value `d` is [`Self::distance`]'s (not deeper inside than the band).
    fn within_band(&self, d: f64) -> bool {
        d > -self.sdf.band * (1.0 - 1e-6)
    }
}

/// A solid obstacle.
#[derive(Debug, Clone)]
pub struct Solid {
    shape: Shape,
    /// Per-axis scale (for meshes already applied: all ones here).
    scale: [f64; 3],
    motion: Motion,
    liquid: Liquid,
    /// Tangential friction: 0 free slip, 1 no slip.
    friction: f32,
}

/// Box signed distance and gradient: `q` is the point relative to the centre, `h` the half
/// extents.
fn box_sdf(q: [f64; 3], h: [f64; 3]) -> (f64, [f64; 3]) {
    let d = [0, 1, 2].map(|a| q[a].abs() - h[a]);
    let out = d.map(|x| x.max(0.0));
    let on = (out[0] * out[0] + out[1] * out[1] + out[2] * out[2]).sqrt();
    if on > 0.0 {
        return (on, [0, 1, 2].map(|a| out[a] / on * q[a].signum()));
    }
    // Inside: the nearest face.
    let a = (0..3).fold(0, |b, a| if d[a] > d[b] { a } else { b });
    let mut g = [0.0; 3];
    g[a] = if q[a] < 0.0 { -1.0 } else { 1.0 };
    (d[a], g)
}

/// Capped cylinder: a 2D box in (radial distance, axial offset from the middle).
fn cylinder_sdf(p: [f64; 3], a: [f64; 3], b: [f64; 3], r: f64) -> (f64, [f64; 3]) {
    let ax = [0, 1, 2].map(|k| b[k] - a[k]);
    let len = (ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]).sqrt();
    let u = ax.map(|c| c / len);
    let mid = [0, 1, 2].map(|k| 0.5 * (a[k] + b[k]));
    let rel = [0, 1, 2].map(|k| p[k] - mid[k]);
    let h = rel[0] * u[0] + rel[1] * u[1] + rel[2] * u[2];
    let radial = [0, 1, 2].map(|k| rel[k] - h * u[k]);
    let rho = (radial[0] * radial[0] + radial[1] * radial[1] + radial[2] * radial[2]).sqrt();
    // Radial unit direction (any perpendicular on the axis itself).
    let e = if rho > 0.0 {
        radial.map(|c| c / rho)
    } else {
        let t = if u[0].abs() < 0.9 {
            [1.0, 0.0, 0.0]
        } else {
            [0.0, 1.0, 0.0]
        };
        let d = t[0] * u[0] + t[1] * u[1] + t[2] * u[2];
        let v = [0, 1, 2].map(|k| t[k] - d * u[k]);
        let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        v.map(|c| c / l)
    };
    // 2D box: half extents (r, len/2) centred at (0, 0) in (rho, h); rho >= 0 so reuse
    // box_sdf on (rho, h, 0) with an unbounded third axis.
    let (d, g2) = box_sdf([rho, h, 0.0], [r, 0.5 * len, f64::INFINITY]);
    let g = [0, 1, 2].map(|k| g2[0] * e[k] + g2[1] * u[k]);
    (d, g)
}

impl Solid {
    /// A validated solid. `scale` must be positive; for [`Shape::Mesh`] pass the same scale the
    /// mesh was built with (it is already applied and only recorded).
    pub fn new(
        shape: Shape,
        scale: [f64; 3],
        motion: Motion,
        liquid: Liquid,
    ) -> Result<Solid, SolidError> {
        for s in scale {
            check_positive("scale", s)?;
        }
        match &shape {
            Shape::Box { min, max } => {
                check_finite("box min", min)?;
                check_finite("box max", max)?;
                if (0..3).any(|a| min[a] >= max[a]) {
                    return Err(SolidError::EmptyBox {
                        min: *min,
                        max: *max,
                    });
                }
            }
            Shape::Sphere { centre, radius } => {
                check_finite("sphere centre", centre)?;
                check_positive("sphere radius", *radius)?;
            }
            Shape::Cylinder { a, b, radius } => {
                check_finite("cylinder end cap", a)?;
                check_finite("cylinder end cap", b)?;
                check_positive("cylinder radius", *radius)?;
                if a == b {
                    return Err(SolidError::ZeroLengthCylinder(*a));
                }
            }
            Shape::Mesh(_) => {}
        }
        let scale = if matches!(shape, Shape::Mesh(_)) {
            [1.0; 3]
        } else {
            scale
        };
        Ok(Solid {
            shape,
            scale,
            motion,
            liquid,
            friction: 0.0,
        })
    }

    /// The same solid with tangential friction `f` (0 free slip, 1 no slip; clamped).
    pub fn with_friction(mut self, f: f32) -> Self {
        self.friction = f.clamp(0.0, 1.0);
        self
    }

    /// Tangential friction: 0 free slip, 1 no slip.
    pub fn friction(&self) -> f32 {
        self.friction
    }

    pub fn liquid(&self) -> Liquid {
        self.liquid
    }
    pub fn motion(&self) -> &Motion {
        &self.motion
    }
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// The per-axis scale of an analytic shape (all ones for meshes: already applied).
    pub fn scale(&self) -> [f64; 3] {
        self.scale
    }
    pub fn is_animated(&self) -> bool {
        self.motion.is_animated()
    }

    /// The pose (body to world) at time `t`.
    pub fn pose(&self, t: f64) -> Pose {
        self.motion.pose(t)
    }

    /// Signed distance of the shape (negative inside it) and its gradient, in the body frame.
    fn shape_sdf(&self, q: [f64; 3]) -> (f64, [f64; 3]) {
        let s = self.scale;
        let uniform = s[0] == s[1] && s[1] == s[2];
        let smin = s[0].min(s[1]).min(s[2]);
        // Sphere and cylinder: unscale, evaluate, scale the distance (exact when uniform).
        let unscaled = |f: &dyn Fn([f64; 3]) -> (f64, [f64; 3])| {
            let (d, g) = f([0, 1, 2].map(|a| q[a] / s[a]));
            let g = if uniform {
                g
            } else {
                let g = [0, 1, 2].map(|a| g[a] / s[a]);
                let l = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
                if l > 0.0 { g.map(|c| c / l) } else { g }
            };
            (d * if uniform { s[0] } else { smin }, g)
        };
        match &self.shape {
            Shape::Box { min, max } => {
                let c = [0, 1, 2].map(|a| 0.5 * (min[a] + max[a]) * s[a]);
                let h = [0, 1, 2].map(|a| 0.5 * (max[a] - min[a]) * s[a]);
                box_sdf([0, 1, 2].map(|a| q[a] - c[a]), h)
            }
            Shape::Sphere { centre, radius } => unscaled(&|p| {
                let d = [0, 1, 2].map(|a| p[a] - centre[a]);
                let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let g = if l > 0.0 {
                    d.map(|c| c / l)
                } else {
                    [0.0, 0.0, 1.0]
                };
                (l - radius, g)
            }),
            Shape::Cylinder { a, b, radius } => unscaled(&|p| cylinder_sdf(p, *a, *b, *radius)),
            Shape::Mesh(m) => m.distance(q),
        }
    }

    /// The solid frozen at time `t`: pose and velocity evaluated once, for many queries (what a
    /// substep's loops should use).
    pub fn at(&self, t: f64) -> PosedSolid<'_> {
        self.posed(self.motion.pose(t), self.motion.velocity(t))
    }

    /// The solid at a pose and rigid velocity found earlier (e.g. `motion().pose(t)` kept for
    /// many queries without a list of [`PosedSolid`]s).
    pub fn posed(&self, pose: Pose, velocity: RigidVelocity) -> PosedSolid<'_> {
        PosedSolid {
            solid: self,
            pose,
            velocity,
        }
    }

    /// Signed distance to the solid at world point `p` and time `t`: negative in the solid,
    /// positive where liquid may be. (For many points at one time use [`Self::at`].)
    pub fn signed_distance(&self, p: [f64; 3], t: f64) -> f64 {
        self.distance_and_normal(p, t).0
    }

    /// [`Self::signed_distance`] and its unit gradient (pointing from the solid into the
    /// liquid's side; zero where it is undefined, e.g. a clamped mesh value far from the mesh).
    pub fn distance_and_normal(&self, p: [f64; 3], t: f64) -> (f64, [f64; 3]) {
        self.eval(&self.motion.pose(t), p)
    }

    /// The signed distance at world point `p` for `pose` as [`Self::eval`] gives it, except
    /// that a mesh deeper inside than its distance band gets the band's value (see
    /// [`MeshShape::distance_banded`]): exact within the band, the right sign everywhere.
    fn eval_banded(&self, pose: &Pose, p: [f64; 3]) -> f64 {
        let d = match &self.shape {
            Shape::Mesh(m) => m.distance_banded(pose.to_body(p)),
            _ => self.shape_sdf(pose.to_body(p)).0,
        };
        match self.liquid {
            Liquid::Outside => d,
            Liquid::Inside => -d,
        }
    }

    fn eval_unless_deep(&self, pose: &Pose, p: [f64; 3]) -> Option<f64> {
        let d = match &self.shape {
            Shape::Mesh(m) => m.distance_unless_deep(pose.to_body(p))?,
            _ => self.shape_sdf(pose.to_body(p)).0,
        };
        Some(match self.liquid {
            Liquid::Outside => d,
            Liquid::Inside => -d,
        })
    }

    fn eval(&self, pose: &Pose, p: [f64; 3]) -> (f64, [f64; 3]) {
        let (d, g) = self.shape_sdf(pose.to_body(p));
        let g = pose.dir_to_world(g);
        match self.liquid {
            Liquid::Outside => (d, g),
            Liquid::Inside => (-d, g.map(|c| -c)),
        }
    }

    /// Velocity of the solid material at world point `p` and time `t`, m/s.
    pub fn velocity(&self, p: [f64; 3], t: f64) -> [f64; 3] {
        self.motion.velocity(t).at(p)
    }

    /// Bounds of the scaled shape in its body frame (what [`Self::bounds`] moves).
    pub fn body_bounds(&self) -> ([f64; 3], [f64; 3]) {
        let (lo, hi) = self.unscaled_bounds();
        let s = self.scale;
        (
            [0, 1, 2].map(|a| lo[a] * s[a]),
            [0, 1, 2].map(|a| hi[a] * s[a]),
        )
    }

    fn unscaled_bounds(&self) -> ([f64; 3], [f64; 3]) {
        match &self.shape {
            Shape::Box { min, max } => (*min, *max),
            Shape::Sphere { centre, radius } => {
                (centre.map(|c| c - radius), centre.map(|c| c + radius))
            }
            Shape::Cylinder { a, b, radius } => (
                [0, 1, 2].map(|k| a[k].min(b[k]) - radius),
                [0, 1, 2].map(|k| a[k].max(b[k]) + radius),
            ),
            Shape::Mesh(m) => m
                .bvh
                .nodes
                .first()
                .map_or(([0.0; 3], [0.0; 3]), |n| (n.lo, n.hi)),
        }
    }

    /// Whether [`Self::signed_distance`] is the shape's exact signed distance (a box at any
    /// scale, a sphere or cylinder at a uniform one; see the module docs), and so 1-Lipschitz.
    pub fn distance_is_exact(&self) -> bool {
        let s = self.scale;
        let uniform = s[0] == s[1] && s[1] == s[2];
        match self.shape {
            Shape::Box { .. } => true,
            Shape::Sphere { .. } | Shape::Cylinder { .. } => uniform,
            Shape::Mesh(_) => false,
        }
    }

    /// Where the computed distance is the shape's exact signed distance (a box at any scale, a
    /// sphere or cylinder at a uniform one: see the module docs), the largest distance of a
    /// point of the scaled shape from its body origin (the farthest corner of
    /// [`Self::body_bounds`]): a rigid move that shifts that origin by `t` and turns by `a`
    /// then shifts every point of the shape, and so changes the distance anywhere, by at most
    /// `t + 2 sin(a / 2)` times it ([`Pose::max_shift`]). `None` for a mesh (its distance is
    /// sampled, not exact) and a per-axis scaled sphere or cylinder (a bound).
    pub fn shift_radius(&self) -> Option<f64> {
        if !self.distance_is_exact() {
            return None;
        }
        let (lo, hi) = self.body_bounds();
        let far = [0, 1, 2].map(|a| lo[a].abs().max(hi[a].abs()));
        Some((far[0] * far[0] + far[1] * far[1] + far[2] * far[2]).sqrt())
    }

    /// World-space bounds of the shape at time `t` (the corners of its body-frame box, moved).
    pub fn bounds(&self, t: f64) -> ([f64; 3], [f64; 3]) {
        self.bounds_at(&self.motion.pose(t))
    }

    /// World-space bounds of the shape at `pose` (see [`Self::bounds`]).
    pub fn bounds_at(&self, pose: &Pose) -> ([f64; 3], [f64; 3]) {
        let s = self.scale;
        let (lo, hi) = self.unscaled_bounds();
        let mut wlo = [f64::INFINITY; 3];
        let mut whi = [f64::NEG_INFINITY; 3];
        for c in 0..8 {
            let q = [0, 1, 2].map(|a| if c >> a & 1 == 1 { hi[a] } else { lo[a] } * s[a]);
            let w = pose.to_world(q);
            for a in 0..3 {
                wlo[a] = wlo[a].min(w[a]);
                whi[a] = whi[a].max(w[a]);
            }
        }
        (wlo, whi)
    }
}

/// A [`Solid`] at one time (see [`Solid::at`]).
#[derive(Debug, Clone, Copy)]
pub struct PosedSolid<'a> {
    solid: &'a Solid,
    pose: Pose,
    velocity: RigidVelocity,
}

impl PosedSolid<'_> {
    /// See [`Solid::signed_distance`].
    pub fn signed_distance(&self, p: [f64; 3]) -> f64 {
        // The same value, without the gradient's rotation to the world frame (and without
        // the BVH query except deep inside a mesh).
        self.distance_unless_deep(p)
            .unwrap_or_else(|| self.distance_and_normal(p).0)
    }

    /// See [`Solid::distance_and_normal`].
    pub fn distance_and_normal(&self, p: [f64; 3]) -> (f64, [f64; 3]) {
        self.solid.eval(&self.pose, p)
    }

    /// [`Self::signed_distance`], exact within a mesh's distance band and only a bound (with
    /// the right sign) deeper inside a mesh: for whole grids of distances whose deep values
    /// only need their sign.
    pub fn signed_distance_banded(&self, p: [f64; 3]) -> f64 {
        self.solid.eval_banded(&self.pose, p)
    }

    /// [`Self::signed_distance`] where it needs no BVH query; `None` deeper inside a mesh than
    /// its band, where it is at most 0 (at least 0 for a container, `Liquid::Inside`).
    pub fn distance_unless_deep(&self, p: [f64; 3]) -> Option<f64> {
        self.solid.eval_unless_deep(&self.pose, p)
    }

    /// See [`Solid::velocity`].
    pub fn velocity(&self, p: [f64; 3]) -> [f64; 3] {
        self.velocity.at(p)
    }

    /// The pose (body to world).
    pub fn pose(&self) -> &Pose {
        &self.pose
    }
}

#[cfg(test)]
mod tests;
