//! Triangle meshes of solid obstacles at a time, in world (scene) coordinates, for the
//! `OUT/obstacles/` output that shows the obstacles where the simulation had them.
//!
//! Box: its 12 triangles; sphere: a UV sphere; cylinder: a capped prism of [`SEGMENTS`] sides;
//! mesh: the input triangles (already scaled), moved by the pose. The shape's scale is applied,
//! then the pose at `t`. Vertex velocities are the rigid-body velocity; normals are the
//! area-weighted average of the incident faces' normals. Winding is kept as given (outward for
//! the analytic shapes); the shape is drawn the same whichever side the liquid is on.
//!
//! Layer 1: imports mesh (layer 0) and the solid type.

use super::solid::{Shape, Solid};
use crate::mesh::TriMesh;

/// Sides of the tessellated cylinder and longitudes of the sphere.
pub const SEGMENTS: usize = 32;

fn push_tri(t: &mut Vec<[u32; 3]>, a: usize, b: usize, c: usize) {
    t.push([a as u32, b as u32, c as u32]);
}

/// Body-frame (unscaled) vertices and triangles of an analytic shape.
fn analytic(shape: &Shape) -> (Vec<[f64; 3]>, Vec<[u32; 3]>) {
    let mut p = Vec::new();
    let mut t = Vec::new();
    match shape {
        Shape::Box { min, max } => {
            for c in 0..8 {
                p.push([0, 1, 2].map(|a| if c >> a & 1 == 1 { max[a] } else { min[a] }));
            }
            // Two triangles per face, outward.
            let quads = [
                [0, 2, 6, 4],
                [1, 5, 7, 3],
                [0, 4, 5, 1],
                [2, 3, 7, 6],
                [0, 1, 3, 2],
                [4, 6, 7, 5],
            ];
            for q in quads {
                push_tri(&mut t, q[0], q[1], q[2]);
                push_tri(&mut t, q[0], q[2], q[3]);
            }
        }
        Shape::Sphere { centre, radius } => {
            let (nu, nv) = (SEGMENTS, SEGMENTS / 2);
            p.push([centre[0], centre[1], centre[2] - radius]);
            for j in 1..nv {
                let th = std::f64::consts::PI * j as f64 / nv as f64;
                for i in 0..nu {
                    let ph = 2.0 * std::f64::consts::PI * i as f64 / nu as f64;
                    p.push([
                        centre[0] + radius * th.sin() * ph.cos(),
                        centre[1] + radius * th.sin() * ph.sin(),
                        centre[2] - radius * th.cos(),
                    ]);
                }
            }
            p.push([centre[0], centre[1], centre[2] + radius]);
            let ring = |j: usize, i: usize| 1 + (j - 1) * nu + i % nu;
            for i in 0..nu {
                push_tri(&mut t, 0, ring(1, i + 1), ring(1, i));
                push_tri(&mut t, p.len() - 1, ring(nv - 1, i), ring(nv - 1, i + 1));
            }
            for j in 1..nv - 1 {
                for i in 0..nu {
                    push_tri(&mut t, ring(j, i), ring(j, i + 1), ring(j + 1, i + 1));
                    push_tri(&mut t, ring(j, i), ring(j + 1, i + 1), ring(j + 1, i));
                }
            }
        }
        Shape::Cylinder { a, b, radius } => {
            let ax = [0, 1, 2].map(|k| b[k] - a[k]);
            let len = (ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]).sqrt();
            let u = ax.map(|c| c / len);
            let seed = if u[0].abs() < 0.9 {
                [1.0, 0.0, 0.0]
            } else {
                [0.0, 1.0, 0.0]
            };
            let d = seed[0] * u[0] + seed[1] * u[1] + seed[2] * u[2];
            let e1 = {
                let v = [0, 1, 2].map(|k| seed[k] - d * u[k]);
                let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                v.map(|c| c / l)
            };
            let e2 = [
                u[1] * e1[2] - u[2] * e1[1],
                u[2] * e1[0] - u[0] * e1[2],
                u[0] * e1[1] - u[1] * e1[0],
            ];
            let n = SEGMENTS;
            p.push(*a);
            p.push(*b);
            for end in [a, b] {
                for i in 0..n {
                    let ph = 2.0 * std::f64::consts::PI * i as f64 / n as f64;
                    let (c, s) = (ph.cos(), ph.sin());
                    p.push([0, 1, 2].map(|k| end[k] + radius * (c * e1[k] + s * e2[k])));
                }
            }
            let lo = |i: usize| 2 + i % n;
            let hi = |i: usize| 2 + n + i % n;
            for i in 0..n {
                push_tri(&mut t, 0, lo(i + 1), lo(i));
                push_tri(&mut t, 1, hi(i), hi(i + 1));
                push_tri(&mut t, lo(i), lo(i + 1), hi(i + 1));
                push_tri(&mut t, lo(i), hi(i + 1), hi(i));
            }
        }
        Shape::Mesh(_) => {}
    }
    (p, t)
}

/// The obstacle `solid` at time `t` as a triangle mesh in world coordinates.
pub fn solid_mesh(solid: &Solid, t: f64) -> TriMesh {
    let posed = solid.at(t);
    let scale = solid.scale();
    let (body, tris): (Vec<[f64; 3]>, Vec<[u32; 3]>) = match solid.shape() {
        Shape::Mesh(m) => {
            // The BVH holds the (scaled) triangles by corner; each corner becomes a vertex.
            let mut p = Vec::with_capacity(m.bvh.tris.len() * 3);
            let mut t = Vec::with_capacity(m.bvh.tris.len());
            for tri in &m.bvh.tris {
                let base = p.len() as u32;
                p.extend_from_slice(tri);
                t.push([base, base + 1, base + 2]);
            }
            (p, t)
        }
        s => {
            let (p, t) = analytic(s);
            (
                p.into_iter()
                    .map(|q| [0, 1, 2].map(|a| q[a] * scale[a]))
                    .collect(),
                t,
            )
        }
    };
    let world: Vec<[f64; 3]> = body.iter().map(|q| posed.pose().to_world(*q)).collect();
    let mut normals = vec![[0.0f64; 3]; world.len()];
    for tri in &tris {
        let [a, b, c] = tri.map(|i| world[i as usize]);
        let e1 = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let e2 = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
        let n = [
            e1[1] * e2[2] - e1[2] * e2[1],
            e1[2] * e2[0] - e1[0] * e2[2],
            e1[0] * e2[1] - e1[1] * e2[0],
        ];
        for &i in tri {
            for k in 0..3 {
                normals[i as usize][k] += n[k];
            }
        }
    }
    TriMesh {
        positions: world.iter().map(|q| q.map(|c| c as f32)).collect(),
        normals: normals
            .iter()
            .map(|n| {
                let l = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
                if l > 0.0 {
                    n.map(|c| (c / l) as f32)
                } else {
                    [0.0, 0.0, 1.0]
                }
            })
            .collect(),
        velocities: world
            .iter()
            .map(|q| posed.velocity(*q).map(|c| c as f32))
            .collect(),
        triangles: tris,
    }
}

/// All `solids` at time `t` as one mesh.
pub fn solids_mesh(solids: &[Solid], t: f64) -> TriMesh {
    let mut out = TriMesh {
        positions: Vec::new(),
        normals: Vec::new(),
        velocities: Vec::new(),
        triangles: Vec::new(),
    };
    for s in solids {
        let m = solid_mesh(s, t);
        let base = out.positions.len() as u32;
        out.positions.extend(m.positions);
        out.normals.extend(m.normals);
        out.velocities.extend(m.velocities);
        out.triangles
            .extend(m.triangles.iter().map(|t| t.map(|i| i + base)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::solid::Liquid;
    use crate::geometry::transform::{Motion, Pose};

    /// Every vertex of each analytic tessellation lies on the shape's surface (distance 0 up
    /// to f32 rounding at unit scale, 1e-5), moved by the pose.
    #[test]
    fn vertices_lie_on_the_surface() {
        let pose = Motion::Static(Pose::new([0.3, -0.2, 0.1], [10.0, 20.0, 30.0]));
        for shape in [
            Shape::Box {
                min: [-0.1, -0.2, -0.3],
                max: [0.2, 0.1, 0.3],
            },
            Shape::Sphere {
                centre: [0.1, 0.0, 0.0],
                radius: 0.25,
            },
            Shape::Cylinder {
                a: [0.0, 0.0, 0.0],
                b: [0.1, 0.2, 0.4],
                radius: 0.1,
            },
        ] {
            let s = Solid::new(shape, [1.0; 3], pose.clone(), Liquid::Outside).unwrap();
            let m = solid_mesh(&s, 0.0);
            assert!(!m.triangles.is_empty());
            for p in &m.positions {
                let d = s.signed_distance(p.map(|c| c as f64), 0.0);
                assert!(d.abs() < 1e-5, "{p:?}: {d}");
            }
        }
    }
}
