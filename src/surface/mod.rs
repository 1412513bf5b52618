//! Surface reconstruction: particle level set, marching cubes, binary PLY.
//!
//! STUB (skeleton): the surface issue replaces this. Public entry points the pipeline uses:
//! [`SurfaceSettings`] (the scene's `surface` section) and [`frame_ply_bytes`].

use crate::output::frame::ParticleFrame;
use crate::scene::Scene;
use serde::{Deserialize, Serialize};

/// The scene's `surface` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SurfaceSettings {}

/// The PLY file of one frame's surface mesh.
pub fn frame_ply_bytes(_frame: &ParticleFrame, _scene: &Scene) -> anyhow::Result<Vec<u8>> {
    // STUB: an empty placeholder until the surface stage lands.
    Ok(Vec::new())
}
