//! Geometry of solid obstacles (merge note: the coordinator merges this list with the shapes /
//! domain modules of the other branch).

pub mod bvh;
pub mod face_fractions;
pub mod mesh_io;
pub mod mesh_sdf;
pub mod solid;
pub mod transform;
