//! Sphere projection and binning for the ray-caster ([`super::raster`]): each particle's
//! camera-space centre and pixel box ([`splats`]), a stable counting sort of the spheres into
//! strips of [`STRIP_ROWS`] image rows ([`bin`]), and each strip's spheres ordered front to back
//! by a counting sort on quantised depth ([`strip_lists`]); every order depends on the data
//! only, so the image does not depend on the thread count.
//!
//! Layer 2 (render): imports particles.

use super::View;
use crate::particles::Particles;
use rayon::prelude::*;

/// Image rows per strip, the unit of parallel work.
pub const STRIP_ROWS: usize = 8;

/// One sphere on screen.
#[derive(Debug, Clone, Copy)]
pub(super) struct Splat {
    /// Centre, camera space, m.
    pub(super) c: [f32; 3],
    /// Colour table index of its speed.
    pub(super) colour: u16,
    /// Pixel box `[x0, x1) x [y0, y1)`; empty when culled.
    pub(super) x0: u16,
    pub(super) x1: u16,
    pub(super) y0: u16,
    pub(super) y1: u16,
}

const CULLED: Splat = Splat {
    c: [0.0; 3],
    colour: 0,
    x0: 0,
    x1: 0,
    y0: 0,
    y1: 0,
};

/// Projects every particle; returns its pixel box and camera-space centre.
pub(super) fn splats(
    particles: &Particles,
    view: &View,
    colour_of: impl Fn(f32) -> u16 + Sync,
) -> Vec<Splat> {
    let cam = &view.camera;
    let eye = cam.eye.map(|v| v as f32);
    let basis = [cam.right, cam.up, cam.forward].map(|v| v.map(|x| x as f32));
    let (w, h) = (cam.width as f32, cam.height as f32);
    let f = cam.focal_px as f32;
    let r = view.sphere_radius;
    let [px, py, pz] = &particles.pos;
    let [vx, vy, vz] = &particles.vel;
    (0..particles.len())
        .into_par_iter()
        .with_min_len(4096)
        .map(|i| {
            let d = [px[i] - eye[0], py[i] - eye[1], pz[i] - eye[2]];
            let c: [f32; 3] = std::array::from_fn(|k| {
                basis[k][0] * d[0] + basis[k][1] * d[1] + basis[k][2] * d[2]
            });
            let [cx, cy, cz] = c;
            if !(cz > 1.001 * r && cx.is_finite() && cy.is_finite() && cz.is_finite()) {
                return CULLED;
            }
            let den = cz * cz - r * r;
            // Tangent slopes of the silhouette along one screen axis.
            let range = |a: f32| -> (f32, f32) {
                let s = (a * a + den).sqrt();
                ((a * cz - r * s) / den, (a * cz + r * s) / den)
            };
            let (xl, xh) = range(cx);
            let (yl, yh) = range(cy);
            let to_px = |v: f32, max: f32| v.clamp(0.0, max) as u16;
            // Pixels whose centre lies within half a pixel of the silhouette's box.
            let x0 = to_px((0.5 * w + f * xl - 1.0).ceil(), w);
            let x1 = to_px((0.5 * w + f * xh).floor() + 1.0, w);
            let y0 = to_px((0.5 * h - f * yh - 1.0).ceil(), h);
            let y1 = to_px((0.5 * h - f * yl).floor() + 1.0, h);
            if x0 >= x1 || y0 >= y1 {
                return CULLED;
            }
            let speed = (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i]).sqrt();
            Splat {
                c,
                colour: colour_of(speed),
                x0,
                x1,
                y0,
                y1,
            }
        })
        .collect()
}

/// Stable counting sort of splat indices into strips: `(starts, ids)`, strip `k` owning
/// `ids[starts[k]..starts[k + 1]]`, in particle order.
pub(super) fn bin(splats: &[Splat], strips: usize) -> (Vec<usize>, Vec<u32>) {
    let strip_range = |s: &Splat| s.y0 as usize / STRIP_ROWS..=(s.y1 as usize - 1) / STRIP_ROWS;
    let mut starts = vec![0usize; strips + 1];
    for s in splats.iter().filter(|s| s.y0 < s.y1) {
        for k in strip_range(s) {
            starts[k + 1] += 1;
        }
    }
    for k in 0..strips {
        starts[k + 1] += starts[k];
    }
    let mut fill = starts.clone();
    let mut ids = vec![0u32; starts[strips]];
    for (i, s) in splats.iter().enumerate().filter(|(_, s)| s.y0 < s.y1) {
        for k in strip_range(s) {
            ids[fill[k]] = i as u32;
            fill[k] += 1;
        }
    }
    (starts, ids)
}

/// Depth levels of the per-strip front-to-back sort.
const DEPTH_LEVELS: usize = 4096;

/// Each strip's spheres, copied out of the splat array and ordered front to back, in parallel:
/// a stable counting sort on the centre's depth quantised to [`DEPTH_LEVELS`] levels between
/// the strip's nearest and farthest sphere, so equal levels keep particle order and the order
/// depends on nothing but the data. (The order only speeds up depth rejection; the fragments
/// kept per pixel do not depend on it beyond ties.) The copies keep the ray-casting loop's
/// reads sequential.
pub(super) fn strip_lists(
    splats: &[Splat],
    starts: &[usize],
    ids: &[u32],
) -> Vec<Vec<(u32, Splat)>> {
    (0..starts.len() - 1)
        .into_par_iter()
        .map(|k| {
            let list: Vec<(u32, Splat)> = ids[starts[k]..starts[k + 1]]
                .iter()
                .map(|&i| (i, splats[i as usize]))
                .collect();
            let (lo, hi) = list.iter().fold((f32::MAX, f32::MIN), |(a, b), (_, s)| {
                (a.min(s.c[2]), b.max(s.c[2]))
            });
            let scale = if hi > lo {
                (DEPTH_LEVELS - 1) as f32 / (hi - lo)
            } else {
                0.0
            };
            let level = |s: &Splat| (((s.c[2] - lo) * scale) as usize).min(DEPTH_LEVELS - 1);
            let mut first = vec![0u32; DEPTH_LEVELS + 1];
            for (_, s) in &list {
                first[level(s) + 1] += 1;
            }
            for l in 0..DEPTH_LEVELS {
                first[l + 1] += first[l];
            }
            let mut sorted = vec![(0u32, CULLED); list.len()];
            for e in &list {
                let l = level(&e.1);
                sorted[first[l] as usize] = *e;
                first[l] += 1;
            }
            sorted
        })
        .collect()
}
