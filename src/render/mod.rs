//! Sphere previews: a CPU render of the particles as lit spheres, PNG.
//!
//! STUB (skeleton): the preview issue replaces this. Public entry points the pipeline uses:
//! [`RenderSettings`] (the scene's `render` section) and [`frame_png_bytes`].

use crate::output::frame::ParticleFrame;
use crate::scene::Scene;
use serde::{Deserialize, Serialize};

/// The scene's `render` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RenderSettings {}

/// The PNG file of one frame's preview.
pub fn frame_png_bytes(_frame: &ParticleFrame, _scene: &Scene) -> anyhow::Result<Vec<u8>> {
    // STUB: an empty placeholder until the preview stage lands.
    Ok(Vec::new())
}
