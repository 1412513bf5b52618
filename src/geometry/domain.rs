//! [`Domain`]: the simulation box, and the one definition of its liquid region (the box minus
//! its one-cell solid wall layer) and of the particle spacing.
//!
//! Layer 1: imports nothing of surge. The simulation (grid walls, seeding bounds), the surface
//! (the level set's wall clip), the preview (the drawn region, the default camera) and the
//! scene's checks all ask this type, so a change of the wall model (obstacles) is made here.
//!
//! Grid convention (as in Bridson, *Fluid Simulation for Computer Graphics*, 2nd ed., 2015,
//! ch. 2, and the tutorial): `resolution` cubic cells of `cell_size` from `lower`; the outermost
//! layer of cells is solid wall, so liquid lives in the inner `resolution - 2` cells per axis.

use serde::{Deserialize, Serialize};

/// The simulation box: `resolution` cubic cells of `cell_size` metres from `lower`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Domain {
    /// Lower corner `[x, y, z]`, m.
    pub lower: [f64; 3],
    /// Edge length of one cubic cell, m. Must be > 0.
    pub cell_size: f64,
    /// Cells along x, y, z, including the one-cell solid wall layer on each side. Each >= 3.
    pub resolution: [u32; 3],
}

impl Domain {
    /// Upper corner, m.
    pub fn upper(&self) -> [f64; 3] {
        std::array::from_fn(|a| self.lower[a] + self.resolution[a] as f64 * self.cell_size)
    }
    /// Spacing of seeded particles (2 x 2 x 2 per cell), m.
    pub fn particle_spacing(&self) -> f64 {
        0.5 * self.cell_size
    }
}

impl Domain {
    /// The liquid region: the domain minus its one-cell solid wall layer, `[lower, upper]`, m.
    pub fn liquid_region(&self) -> [[f64; 3]; 2] {
        let up = self.upper();
        let h = self.cell_size;
        [
            std::array::from_fn(|a| self.lower[a] + h),
            std::array::from_fn(|a| up[a] - h),
        ]
    }
}
