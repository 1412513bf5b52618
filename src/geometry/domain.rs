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

use super::{Boundaries, WallFriction};
use crate::error::InputError;
use crate::error::check::{err, finite3, positive};
use crate::error::show;
use serde::{Deserialize, Serialize};

/// Smallest cell, m. Below a micron, FLIP's assumptions (no surface tension) do not hold and
/// squared lengths leave the f32 range.
pub const MIN_CELL_SIZE: f64 = 1e-6;

/// Positions are f32: the domain must lie close enough to the origin that f32 resolves this
/// fraction of a cell everywhere in it.
pub const POSITION_RESOLUTION_CELLS: f64 = 0.01;

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
    /// What each face is: `"wall"` (default) or `"open"` (free outflow). Left out of the
    /// resolved scene when every face is a wall, so older runs keep their physics hash.
    #[serde(default, skip_serializing_if = "Boundaries::all_walls")]
    pub boundaries: Boundaries,
    /// Tangential friction of the wall faces, one for all or per face (see
    /// [`WallFriction`]): 0 free slip (the default, left out of the resolved scene), 1 no slip.
    #[serde(default, skip_serializing_if = "WallFriction::is_free_slip")]
    pub friction: WallFriction,
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

impl Domain {
    /// Checks the scene's `domain` section: finite corner, a cell size surge can simulate, at
    /// least 3 cells per axis, at most 2^30 cells, and close enough to the origin for f32
    /// positions.
    pub fn check(&self) -> Result<(), InputError> {
        let d = self;
        finite3(
            "domain.lower",
            &d.lower,
            "give the lower corner as three finite numbers in metres",
        )?;
        positive(
            "domain.cell_size",
            d.cell_size,
            "set the edge length of one grid cell in metres, e.g. 0.02",
        )?;
        if d.cell_size < MIN_CELL_SIZE {
            return Err(err(
                "domain.cell_size",
                format!(
                    "{} m is below the smallest cell surge simulates ({} m)",
                    show(d.cell_size),
                    show(MIN_CELL_SIZE)
                ),
                "give the cell size in metres (e.g. 0.02 for 2 cm); scale a miniature scene up",
            ));
        }
        for a in 0..3 {
            if d.resolution[a] < 3 {
                return Err(err(
                    &format!("domain.resolution[{a}]"),
                    format!(
                        "{} cells: at least 3 are needed (one wall layer each side, one for liquid)",
                        d.resolution[a]
                    ),
                    "give at least 3 cells per axis",
                ));
            }
        }
        if let Some((field, mu)) = d.friction.out_of_range() {
            return Err(err(
                &field,
                format!("{} is not between 0 and 1", show(mu)),
                "give 0 or \"slip\" (free slip, the default) up to 1 or \"no_slip\"",
            ));
        }
        let cells: u64 = d.resolution.iter().map(|&n| n as u64).product();
        if cells > 1 << 30 {
            return Err(err(
                "domain.resolution",
                format!("{cells} cells is more than surge handles (2^30)"),
                "use fewer or larger cells",
            ));
        }
        // f32 positions: the spacing of f32 values at the farthest coordinate must stay well
        // below a cell, or particles would move in visible steps.
        let far = (0..3)
            .map(|a| d.lower[a].abs().max(d.upper()[a].abs()))
            .fold(0.0f64, f64::max);
        let f32_spacing = far * f32::EPSILON as f64;
        if f32_spacing > POSITION_RESOLUTION_CELLS * d.cell_size {
            return Err(err(
                "domain.lower",
                format!(
                    "the domain reaches {far:.6e} m from the origin, where positions (stored as f32) are {f32_spacing:.3e} m apart: more than {}% of a {} m cell",
                    POSITION_RESOLUTION_CELLS * 100.0,
                    d.cell_size
                ),
                "simulate near the origin (e.g. lower = [0, 0, 0]) and move the imported meshes into place in Blender",
            ));
        }
        Ok(())
    }
}
