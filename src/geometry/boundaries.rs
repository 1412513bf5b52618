//! [`Boundaries`]: what each of the domain's six faces is, `"wall"` (solid, the default) or
//! `"open"` (liquid leaves through it: the face's cell layer is air at pressure 0 and particles
//! that reach it are removed).
//!
//! Layer 1: imports nothing of surge. The scene's `domain.boundaries` section; the stepper reads
//! it to relabel the open faces' boundary layers (see `sim::emit`).

use serde::{Deserialize, Serialize};

/// One domain face.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// Solid wall: no flow through the face (free slip). The default.
    #[default]
    Wall,
    /// Open: free outflow, pressure 0 on the face's cell layer; particles that reach it are
    /// removed.
    Open,
}

/// The six faces of the domain. (default: all walls)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundaries {
    #[serde(default)]
    pub x_min: Boundary,
    #[serde(default)]
    pub x_max: Boundary,
    #[serde(default)]
    pub y_min: Boundary,
    #[serde(default)]
    pub y_max: Boundary,
    #[serde(default)]
    pub z_min: Boundary,
    #[serde(default)]
    pub z_max: Boundary,
}

impl Boundaries {
    /// True when every face is a wall (today's closed box).
    pub fn all_walls(&self) -> bool {
        *self == Self::default()
    }

    /// The face of `axis` (0 x, 1 y, 2 z) on the `upper` side or the lower one.
    pub fn face(&self, axis: usize, upper: bool) -> Boundary {
        match (axis, upper) {
            (0, false) => self.x_min,
            (0, true) => self.x_max,
            (1, false) => self.y_min,
            (1, true) => self.y_max,
            (2, false) => self.z_min,
            _ => self.z_max,
        }
    }

    /// `open[axis][upper]`: which faces are open.
    pub fn open(&self) -> [[bool; 2]; 3] {
        std::array::from_fn(|a| std::array::from_fn(|s| self.face(a, s == 1) == Boundary::Open))
    }

    /// True when any face is open.
    pub fn any_open(&self) -> bool {
        self.open().iter().flatten().any(|&o| o)
    }

    /// The JSON name of a face.
    pub fn name(axis: usize, upper: bool) -> &'static str {
        ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"][2 * axis + upper as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faces_by_name() {
        let b: Boundaries = serde_json::from_str(r#"{"x_max": "open", "z_min": "wall"}"#).unwrap();
        assert_eq!(b.open(), [[false, true], [false, false], [false, false]]);
        assert!(b.any_open() && !b.all_walls());
        assert!(serde_json::from_str::<Boundaries>(r#"{"x_maxx": "open"}"#).is_err());
        assert!(serde_json::from_str::<Boundaries>(r#"{"x_max": "opened"}"#).is_err());
        assert_eq!(Boundaries::name(1, true), "y_max");
    }
}
