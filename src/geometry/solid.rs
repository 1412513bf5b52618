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
//!   grid nodes within the band, trilinear in between (see [`super::mesh_sdf`]).
//!
//! Analytic distances (Quilez's box and capped-cylinder forms, derived here as a 2D box in the
//! cylinder's radial/axial coordinates) have closed-form gradients; the mesh gradient is that of
//! the trilinear interpolant. Velocities are the rigid-body field of [`Motion::velocity`].

use super::bvh::Bvh;
use super::mesh_io::IndexedMesh;
use super::mesh_sdf::{GridSdf, GridSpec, mesh_sdf};
use super::transform::{Motion, Pose};
use std::sync::Arc;

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

/// A solid obstacle.
#[derive(Debug, Clone)]
pub struct Solid {
    shape: Shape,
    /// Per-axis scale (for meshes already applied: all ones here).
    scale: [f64; 3],
    motion: Motion,
    liquid: Liquid,
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
        })
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
            Shape::Mesh(m) => {
                let (d, g) = m.sdf.sample(q);
                let l = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
                (d, if l > 0.0 { g.map(|c| c / l) } else { g })
            }
        }
    }

    /// Signed distance to the solid at world point `p` and time `t`: negative in the solid,
    /// positive where liquid may be.
    pub fn signed_distance(&self, p: [f64; 3], t: f64) -> f64 {
        self.distance_and_normal(p, t).0
    }

    /// [`Self::signed_distance`] and its unit gradient (pointing from the solid into the
    /// liquid's side; zero where it is undefined, e.g. a clamped mesh value far from the mesh).
    pub fn distance_and_normal(&self, p: [f64; 3], t: f64) -> (f64, [f64; 3]) {
        let pose = self.motion.pose(t);
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

    /// World-space bounds of the shape at time `t` (the corners of its body-frame box, moved).
    pub fn bounds(&self, t: f64) -> ([f64; 3], [f64; 3]) {
        let s = self.scale;
        let (lo, hi) = match &self.shape {
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
        };
        let pose = self.motion.pose(t);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::mesh_io::test_meshes::icosphere;
    use crate::geometry::transform::Keyframe;

    fn fixed(translate: [f64; 3], rotate: [f64; 3]) -> Motion {
        Motion::Static(Pose::new(translate, rotate))
    }

    /// Deterministic points in a cube of half-width `r` around `c`.
    fn points(n: usize, c: [f64; 3], r: f64) -> Vec<[f64; 3]> {
        let mut s = 12345u64;
        let mut u = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| [0, 1, 2].map(|a| c[a] + r * (2.0 * u() - 1.0)))
            .collect()
    }

    #[test]
    fn rotated_box_distance_is_exact() {
        // A 2 x 1 x 1 box centred at the origin, rotated 30 degrees about z, moved to (5, 0, 0).
        let b = Solid::new(
            Shape::Box {
                min: [-1.0, -0.5, -0.5],
                max: [1.0, 0.5, 0.5],
            },
            [1.0; 3],
            fixed([5.0, 0.0, 0.0], [0.0, 0.0, 30.0]),
            Liquid::Outside,
        )
        .unwrap();
        let (c, s) = (30f64.to_radians().cos(), 30f64.to_radians().sin());
        // 0.25 beyond the +x face centre, along the rotated x axis.
        let p = [5.0 + 1.25 * c, 1.25 * s, 0.0];
        assert!((b.signed_distance(p, 0.0) - 0.25).abs() < 1e-12);
        let (_, n) = b.distance_and_normal(p, 0.0);
        assert!((n[0] - c).abs() < 1e-12 && (n[1] - s).abs() < 1e-12);
        // Centre: 0.5 deep (nearest faces are the y and z ones).
        assert!((b.signed_distance([5.0, 0.0, 0.0], 0.0) + 0.5).abs() < 1e-12);
        // Beyond a corner: Euclidean distance to it.
        let corner = Pose::new([5.0, 0.0, 0.0], [0.0, 0.0, 30.0]).to_world([1.3, 0.9, 0.5]);
        assert!((b.signed_distance(corner, 0.0) - (0.09f64 + 0.16).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn box_with_per_axis_scale_is_exact() {
        let b = Solid::new(
            Shape::Box {
                min: [0.0; 3],
                max: [1.0; 3],
            },
            [2.0, 3.0, 4.0],
            fixed([0.0; 3], [0.0; 3]),
            Liquid::Outside,
        )
        .unwrap();
        assert!((b.signed_distance([2.5, 1.0, 1.0], 0.0) - 0.5).abs() < 1e-12);
        assert!((b.signed_distance([1.0, 1.5, 3.9], 0.0) + 0.1).abs() < 1e-12);
        assert_eq!(b.bounds(0.0), ([0.0; 3], [2.0, 3.0, 4.0]));
    }

    #[test]
    fn cylinder_regions() {
        let c = Solid::new(
            Shape::Cylinder {
                a: [0.0, 0.0, 0.0],
                b: [0.0, 0.0, 2.0],
                radius: 1.0,
            },
            [1.0; 3],
            fixed([0.0; 3], [0.0; 3]),
            Liquid::Outside,
        )
        .unwrap();
        let d = |p| c.signed_distance(p, 0.0);
        assert!((d([0.0, 0.0, 3.0]) - 1.0).abs() < 1e-12, "above the cap");
        assert!((d([0.0, 2.0, 1.0]) - 1.0).abs() < 1e-12, "beside the wall");
        assert!(
            (d([0.0, 2.0, 3.0]) - 2f64.sqrt()).abs() < 1e-12,
            "past the rim"
        );
        assert!(
            (d([0.0, 0.3, 1.0]) + 0.7).abs() < 1e-12,
            "inside, nearest the wall"
        );
        assert!(
            (d([0.0, 0.0, 0.2]) + 0.2).abs() < 1e-12,
            "inside, nearest a cap"
        );
        assert!(
            (d([0.0, 0.0, 1.0]) + 1.0).abs() < 1e-12,
            "on the axis, middle"
        );
        // A tilted cylinder gives the same numbers in its own frame.
        let t = Solid::new(
            Shape::Cylinder {
                a: [1.0, 1.0, 1.0],
                b: [2.0, 2.0, 2.0],
                radius: 0.5,
            },
            [1.0; 3],
            fixed([0.0; 3], [0.0; 3]),
            Liquid::Outside,
        )
        .unwrap();
        let beyond = [2.0 + 0.3 / 3f64.sqrt(); 3];
        assert!((t.signed_distance(beyond, 0.0) - 0.3).abs() < 1e-12);
    }

    #[test]
    fn gradients_match_finite_differences() {
        let shapes = [
            Shape::Box {
                min: [-0.3, -0.2, -0.1],
                max: [0.3, 0.2, 0.4],
            },
            Shape::Sphere {
                centre: [0.1, 0.0, 0.0],
                radius: 0.35,
            },
            Shape::Cylinder {
                a: [0.0, -0.3, 0.0],
                b: [0.1, 0.3, 0.05],
                radius: 0.2,
            },
        ];
        for (n, shape) in shapes.into_iter().enumerate() {
            for liquid in [Liquid::Outside, Liquid::Inside] {
                let s = Solid::new(
                    shape.clone(),
                    [1.5; 3],
                    fixed([0.2, -0.1, 0.3], [20.0, -35.0, 50.0]),
                    liquid,
                )
                .unwrap();
                let mut checked = 0;
                for p in points(300, [0.2, -0.1, 0.3], 1.0) {
                    let (d, g) = s.distance_and_normal(p, 0.0);
                    let e = 1e-6;
                    let fd = [0, 1, 2].map(|a| {
                        let (mut hi, mut lo) = (p, p);
                        hi[a] += e;
                        lo[a] -= e;
                        (s.signed_distance(hi, 0.0) - s.signed_distance(lo, 0.0)) / (2.0 * e)
                    });
                    let len = (fd[0] * fd[0] + fd[1] * fd[1] + fd[2] * fd[2]).sqrt();
                    // Skip the medial set (kinks), where the distance has no gradient.
                    if (len - 1.0).abs() > 1e-4 || d.abs() < 1e-3 {
                        continue;
                    }
                    assert!(
                        (0..3).all(|a| (g[a] - fd[a]).abs() < 1e-4),
                        "shape {n} at {p:?}: {g:?} vs {fd:?}"
                    );
                    checked += 1;
                }
                assert!(checked > 200, "shape {n}: {checked}");
            }
        }
    }

    #[test]
    fn container_negates_the_sign() {
        let shape = Shape::Sphere {
            centre: [0.0; 3],
            radius: 1.0,
        };
        let m = fixed([0.0; 3], [0.0; 3]);
        let out = Solid::new(shape.clone(), [1.0; 3], m.clone(), Liquid::Outside).unwrap();
        let inn = Solid::new(shape, [1.0; 3], m, Liquid::Inside).unwrap();
        for p in points(50, [0.0; 3], 2.0) {
            assert_eq!(out.signed_distance(p, 0.0), -inn.signed_distance(p, 0.0));
        }
        assert!(
            inn.signed_distance([0.0; 3], 0.0) > 0.0,
            "liquid side is positive"
        );
    }

    #[test]
    fn per_axis_scaled_sphere_is_a_lower_bound_with_the_right_sign() {
        // An ellipsoid with semi-axes 0.5, 1, 1.5; compare with its densely sampled surface.
        let scale = [0.5, 1.0, 1.5];
        let s = Solid::new(
            Shape::Sphere {
                centre: [0.0; 3],
                radius: 1.0,
            },
            scale,
            fixed([0.0; 3], [0.0; 3]),
            Liquid::Outside,
        )
        .unwrap();
        let surf = icosphere([0.0; 3], 1.0, 5);
        let samples: Vec<[f64; 3]> = surf
            .positions
            .iter()
            .map(|p| [0, 1, 2].map(|a| p[a] * scale[a]))
            .collect();
        for p in points(200, [0.0; 3], 2.0) {
            let d = s.signed_distance(p, 0.0);
            let inside = (0..3).map(|a| (p[a] / scale[a]).powi(2)).sum::<f64>() < 1.0;
            let upper = samples
                .iter()
                .map(|q| (0..3).map(|a| (p[a] - q[a]).powi(2)).sum::<f64>().sqrt())
                .fold(f64::INFINITY, f64::min);
            assert_eq!(d < 0.0, inside, "{p:?}");
            assert!(d.abs() <= upper + 1e-9, "{p:?}: {d} vs {upper}");
        }
    }

    #[test]
    fn mesh_solid_matches_the_analytic_sphere_and_moves_with_its_keys() {
        // A unit icosphere scaled by 0.3 (radius 0.3 = 10 cells of 0.03), keyframed.
        let h = 0.03;
        let shape = MeshShape::build(&icosphere([0.0; 3], 1.0, 5), [0.3; 3], h, 3.0).unwrap();
        let keys = vec![
            Keyframe {
                time: 0.0,
                translate: [0.0; 3],
                rotate_deg: [0.0; 3],
            },
            Keyframe {
                time: 1.0,
                translate: [0.5, 0.0, 0.0],
                rotate_deg: [0.0, 0.0, 90.0],
            },
        ];
        let motion = Motion::keyframed(keys).unwrap();
        let mesh = Solid::new(
            Shape::Mesh(Arc::new(shape)),
            [0.3; 3],
            motion.clone(),
            Liquid::Outside,
        )
        .unwrap();
        let ball = Solid::new(
            Shape::Sphere {
                centre: [0.0; 3],
                radius: 0.3,
            },
            [1.0; 3],
            motion,
            Liquid::Outside,
        )
        .unwrap();
        let mut worst: f64 = 0.0;
        for t in [0.0, 0.37, 1.0] {
            let c = ball.pose(t).translate;
            for p in points(2000, [c.x, c.y, c.z], 0.45) {
                let (want, got) = (ball.signed_distance(p, t), mesh.signed_distance(p, t));
                if want.abs() > h {
                    assert_eq!(got < 0.0, want < 0.0, "{p:?} at {t}");
                }
                if want.abs() < 2.0 * h {
                    worst = worst.max((got - want).abs() / h);
                }
                assert_eq!(mesh.velocity(p, t), ball.velocity(p, t));
            }
        }
        // Between nodes the trilinear interpolant of the exact node distances of a sphere of
        // radius 10 cells is off by about h^2 / (8 R) per direction: a few hundredths of a cell.
        eprintln!("mesh vs analytic sphere within 2 cells of the surface: worst {worst:.4} cells");
        assert!(worst < 0.05, "{worst}");
    }

    #[test]
    fn bad_shapes_are_refused() {
        let m = fixed([0.0; 3], [0.0; 3]);
        let new = |shape, scale| Solid::new(shape, scale, m.clone(), Liquid::Outside).unwrap_err();
        let e = new(
            Shape::Sphere {
                centre: [0.0; 3],
                radius: -1.0,
            },
            [1.0; 3],
        );
        assert_eq!(
            e,
            SolidError::NotPositive {
                field: "sphere radius",
                value: -1.0
            }
        );
        let e = new(
            Shape::Box {
                min: [0.0; 3],
                max: [1.0, 0.0, 1.0],
            },
            [1.0; 3],
        );
        assert!(matches!(e, SolidError::EmptyBox { .. }), "{e}");
        let e = new(
            Shape::Cylinder {
                a: [1.0; 3],
                b: [1.0; 3],
                radius: 1.0,
            },
            [1.0; 3],
        );
        assert!(matches!(e, SolidError::ZeroLengthCylinder(_)), "{e}");
        let e = new(
            Shape::Sphere {
                centre: [0.0; 3],
                radius: 1.0,
            },
            [1.0, 0.0, 1.0],
        );
        assert!(e.to_string().contains("scale = 0"), "{e}");
        let e = new(
            Shape::Sphere {
                centre: [f64::NAN; 3],
                radius: 1.0,
            },
            [1.0; 3],
        );
        assert!(matches!(e, SolidError::NotFinite { .. }));
        let big =
            MeshShape::build(&icosphere([0.0; 3], 1.0, 0), [1000.0; 3], 0.001, 3.0).unwrap_err();
        assert!(matches!(big, SolidError::MeshGridTooLarge { .. }), "{big}");
    }
}
