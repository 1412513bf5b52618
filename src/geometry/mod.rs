//! Geometry of solid obstacles: a self-contained layer (nalgebra, rayon and the mesh readers
//! only) that the simulation, surface and preview stages query.
//!
//! - [`mesh_io`]: OBJ / PLY / STL into a plain indexed triangle mesh, with typed errors.
//! - [`bvh`]: a flat BVH over triangles: closest point, fast generalised winding number.
//! - [`mesh_sdf`]: narrow-band signed distance of a mesh on a regular grid, with a sign that
//!   survives holes and flipped triangles.
//! - [`transform`]: rigid poses and keyframed motion, exact functions of time.
//! - [`solid`]: the obstacle type (box, sphere, cylinder, mesh; scale; pose; which side the
//!   liquid is on): signed distance, normal and velocity at `(point, time)`.
//! - [`face_fractions`]: Batty-Bertails-Bridson open fractions of MAC faces.
//!
//! (Merge note: the other branch's `domain` and `shapes` modules join this list.)

pub mod bvh;
pub mod face_fractions;
pub mod mesh_io;
pub mod mesh_sdf;
pub mod solid;
pub mod transform;
