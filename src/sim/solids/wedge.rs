//! The push-out in a wedge between an obstacle and a domain wall: where the clamp into the
//! domain's interior box would put a pushed-out particle back into the obstacle (the
//! obstacle's distance gradient points into the wall), the push-out goes on along the wall.

use super::{Posed, nearest};

/// Clamps a pushed-out position `p` into the domain's interior box `lo..hi`. Where the clamp
/// moved it back towards the solid (a wedge between an obstacle and a domain wall, where the
/// obstacle's gradient points into the wall), the push-out goes on along the gradient with the
/// clamped axes' components removed, i.e. along the wall, out of the wedge (at most a cell per
/// step, three steps), and the result is clamped again.
pub(super) fn slide_along_walls(
    posed: &Posed<'_>,
    mut p: [f64; 3],
    eps: f64,
    lo: [f32; 3],
    hi: [f32; 3],
    h: f64,
) -> [f32; 3] {
    let clamp =
        |p: [f64; 3]| -> [f32; 3] { std::array::from_fn(|a| (p[a] as f32).clamp(lo[a], hi[a])) };
    let mut q = clamp(p);
    if (0..3).all(|a| q[a] == p[a] as f32) {
        return q;
    }
    for _ in 0..3 {
        p = q.map(|c| c as f64);
        let (dd, g, _) = nearest(posed, p);
        if dd >= eps {
            break;
        }
        // The gradient without its components into the walls the position lies on.
        let t: [f64; 3] = std::array::from_fn(|a| {
            let into = (q[a] <= lo[a] && g[a] < 0.0) || (q[a] >= hi[a] && g[a] > 0.0);
            if into { 0.0 } else { g[a] }
        });
        let tl2 = t[0] * t[0] + t[1] * t[1] + t[2] * t[2];
        if tl2 < 1e-6 {
            break; // the gradient points straight into the wall: nowhere to slide
        }
        // To first order the distance grows by s |t| moving s along t / |t|.
        let tl = tl2.sqrt();
        let s = ((eps - dd) / tl).min(h);
        q = clamp([0, 1, 2].map(|a| p[a] + s * t[a] / tl));
    }
    q
}
