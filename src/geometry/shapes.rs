//! Analytic shapes: an axis-aligned box and a ball, each with membership, exact signed distance
//! and an axis-aligned bounding box. Written once; liquid sources use them today, obstacles,
//! emitters and sinks will.
//!
//! Layer 1: imports nothing of surge. Signed distance is negative inside (the convention of
//! Osher & Fedkiw, *Level Set Methods and Dynamic Implicit Surfaces*, 2003); the box's exact
//! distance is the usual `|max(q, 0)| + min(max_a q_a, 0)` with `q = |p - c| - half extent`
//! (Quilez, "distance functions", and Baerentzen & Aanaes 2005 for meshes).

/// An axis-aligned box `[min, max]`, m.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cuboid {
    pub min: [f64; 3],
    pub max: [f64; 3],
}

/// A ball of `radius` around `center`, m.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ball {
    pub center: [f64; 3],
    pub radius: f64,
}

/// What every shape answers.
pub trait Shape {
    /// True when `p` is inside or on the surface.
    fn contains(&self, p: [f64; 3]) -> bool;
    /// Exact signed distance to the surface, m: negative inside.
    fn signed_distance(&self, p: [f64; 3]) -> f64;
    /// Bounding box `[lower, upper]`, m.
    fn aabb(&self) -> [[f64; 3]; 2];
}

impl Shape for Cuboid {
    fn contains(&self, p: [f64; 3]) -> bool {
        (0..3).all(|a| p[a] >= self.min[a] && p[a] <= self.max[a])
    }
    fn signed_distance(&self, p: [f64; 3]) -> f64 {
        let q: [f64; 3] = std::array::from_fn(|a| {
            let c = 0.5 * (self.min[a] + self.max[a]);
            let half = 0.5 * (self.max[a] - self.min[a]);
            (p[a] - c).abs() - half
        });
        let outside = q.iter().map(|x| x.max(0.0).powi(2)).sum::<f64>().sqrt();
        let inside = q[0].max(q[1]).max(q[2]).min(0.0);
        outside + inside
    }
    fn aabb(&self) -> [[f64; 3]; 2] {
        [self.min, self.max]
    }
}

impl Shape for Ball {
    fn contains(&self, p: [f64; 3]) -> bool {
        let (c, r) = (self.center, self.radius);
        (0..3).map(|a| (p[a] - c[a]).powi(2)).sum::<f64>() <= r * r
    }
    fn signed_distance(&self, p: [f64; 3]) -> f64 {
        let c = self.center;
        (0..3).map(|a| (p[a] - c[a]).powi(2)).sum::<f64>().sqrt() - self.radius
    }
    fn aabb(&self) -> [[f64; 3]; 2] {
        let (c, r) = (self.center, self.radius);
        [
            std::array::from_fn(|a| c[a] - r),
            std::array::from_fn(|a| c[a] + r),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distances against hand-worked values: a unit cube's centre is half an edge inside, a
    /// point one unit off a face is one unit out, one off a corner diagonal is sqrt(3) out.
    #[test]
    fn exact_distances() {
        let b = Cuboid {
            min: [0.0; 3],
            max: [1.0; 3],
        };
        assert_eq!(b.signed_distance([0.5; 3]), -0.5);
        assert_eq!(b.signed_distance([2.0, 0.5, 0.5]), 1.0);
        assert!((b.signed_distance([2.0; 3]) - 3f64.sqrt()).abs() < 1e-15);
        assert!(b.contains([1.0, 0.0, 0.5]) && !b.contains([1.0 + 1e-12, 0.5, 0.5]));
        let s = Ball {
            center: [1.0, 2.0, 3.0],
            radius: 0.5,
        };
        assert_eq!(s.signed_distance([1.0, 2.0, 4.0]), 0.5);
        assert!(s.contains([1.0, 2.5, 3.0]) && !s.contains([1.0, 2.6, 3.0]));
        assert_eq!(s.aabb(), [[0.5, 1.5, 2.5], [1.5, 2.5, 3.5]]);
    }
}
