//! [`OutputSettings`], the scene's `output` section: which files a run writes and how many
//! checkpoints it keeps. Owned by the output stage, which checks it.

use crate::error::InputError;
use crate::error::check::err;
use serde::{Deserialize, Serialize};

/// What a run writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSettings {
    /// Write `particles/frame_NNNN.bin`. (default: `true`)
    #[serde(default = "yes")]
    pub particles: bool,
    /// Write `meshes/frame_NNNN.ply`. (default: `true`)
    #[serde(default = "yes")]
    pub meshes: bool,
    /// Write `previews/frame_NNNN.png`. (default: `true`)
    #[serde(default = "yes")]
    pub previews: bool,
    /// Also write the tutorial's text frames, named by this printf pattern with one integer
    /// (e.g. `fluid.%03d.part`). (default: none; set from `output_fname` for tutorial input)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_pattern: Option<String>,
    /// Write a checkpoint every this many frames (0: only at the end). (default: `10`)
    #[serde(default = "default_checkpoint_every")]
    pub checkpoint_every: u32,
    /// Checkpoints kept; older ones are removed. (default: `2`)
    #[serde(default = "default_keep_checkpoints")]
    pub keep_checkpoints: u32,
    /// Write the obstacles as binary PLY per frame in `OUT/obstacles/`, in scene coordinates.
    /// (default: on when the scene has obstacles)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obstacle_meshes: Option<bool>,
}

impl Default for OutputSettings {
    fn default() -> Self {
        Self {
            particles: true,
            meshes: true,
            previews: true,
            part_pattern: None,
            checkpoint_every: default_checkpoint_every(),
            keep_checkpoints: default_keep_checkpoints(),
            obstacle_meshes: None,
        }
    }
}

fn default_checkpoint_every() -> u32 {
    10
}
fn default_keep_checkpoints() -> u32 {
    2
}
fn yes() -> bool {
    true
}

impl OutputSettings {
    /// Checks the section: at least one checkpoint kept, a usable `.part` name pattern.
    pub fn check(&self) -> Result<(), InputError> {
        if self.keep_checkpoints < 1 {
            return Err(err(
                "output.keep_checkpoints",
                "must be at least 1",
                "keep at least one checkpoint, e.g. 2",
            ));
        }
        if let Some(p) = &self.part_pattern
            && let Err(e) = super::part::NamePattern::parse(p)
        {
            return Err(err(
                "output.part_pattern",
                e,
                "use a file name with one `%d`-style conversion, e.g. `fluid.%03d.part`",
            ));
        }
        Ok(())
    }
}
