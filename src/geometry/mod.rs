//! Geometry shared by every stage: the simulation [`Domain`] (liquid region, wall layer,
//! particle spacing) and analytic [`shapes`] (membership, signed distance, bounding boxes).
//!
//! Layer 1: imports only layer 0 (error). The stages (sim, surface, render, output)
//! and the scene reader import it; it imports none of them.

pub mod boundaries;
pub mod domain;
pub mod shapes;

pub use boundaries::{Boundaries, Boundary};
pub use domain::Domain;
pub use shapes::{Ball, Cuboid, Shape};
