//! Geometry shared by every stage: the simulation [`Domain`] (liquid region, wall layer,
//! particle spacing), analytic [`shapes`] for sources (membership, signed distance, bounding
//! boxes), and the geometry of solid obstacles:
//!
//! - [`mesh_io`]: OBJ / PLY / STL into a plain indexed triangle mesh, with typed errors.
//! - [`bvh`]: a flat BVH over triangles: closest point, fast generalised winding number.
//! - [`mesh_sdf`]: narrow-band signed distance of a mesh on a regular grid, with a sign that
//!   survives holes and flipped triangles.
//! - [`transform`]: rigid poses and keyframed motion, exact functions of time.
//! - [`solid`]: the obstacle type (box, sphere, cylinder, mesh; scale; pose; which side the
//!   liquid is on): signed distance, normal and velocity at `(point, time)`.
//! - [`solid_mesh`]: obstacles as triangle meshes at a time (the `OUT/obstacles/` output).
//! - [`face_fractions`]: Batty-Bertails-Bridson open fractions of MAC faces.
//!
//! Layer 1: imports only layer 0 (error, mesh). The stages (sim, surface, render, output)
//! and the scene reader import it; it imports none of them.

pub mod boundaries;
pub mod bvh;
pub mod domain;
pub mod face_fractions;
pub mod mesh_io;
pub mod mesh_sdf;
pub mod shapes;
pub mod solid;
pub mod solid_mesh;
pub mod transform;
pub mod wall_friction;

pub use boundaries::{Boundaries, Boundary};
pub use domain::Domain;
pub use shapes::{Ball, Cuboid, Shape};
pub use wall_friction::WallFriction;
