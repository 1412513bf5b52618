//! What surrounds the liquid: the sky gradient, the shaded floor with its scale grid, the liquid
//! region's edges, and the legend bar.
//!
//! The floor and the edges are fragments like the spheres': each has a distance along the pixel's
//! ray, so liquid in front hides them and they hide liquid behind. Distances are ray lengths from
//! the eye, m. Edges are clipped to the near plane, projected, and drawn as anti-aliased lines
//! about [`LINE_WIDTH_PX`] wide, whose depth is interpolated perspective-correctly (`1/z` is
//! affine in screen space). Grid lines on the floor are anti-aliased by their distance in pixels
//! (world distance over the pixel's footprint on the floor) and fade out where grid cells get
//! smaller than a few pixels, so the far floor does not shimmer.
//!
//! The floor also carries a soft contact shadow: particles are counted on a grid over the floor
//! (looking along gravity), each weighted by `exp(-height / (H/4))` with `H` the region's height,
//! the counts are blurred (three box passes of [`SHADOW_BLUR_CELLS`] cells, close to a Gaussian),
//! and the floor darkens by up to [`SHADOW_STRENGTH`] as `1 - exp(-density)`. Liquid resting on
//! the floor shadows it fully, spray high above it barely, so heights read at a glance. Weights
//! are fixed-point integers, so the sum, and the image, does not depend on the thread count.

use super::View;
use super::camera::{V3, dot, sub};
use super::colormap::{srgb_to_linear, viridis};
use crate::image::Image;
use crate::particles::Particles;
use rayon::prelude::*;

/// Width of the region's edge lines, pixels.
pub const LINE_WIDTH_PX: f32 = 1.3;
/// Opacity of an edge line.
const LINE_ALPHA: f32 = 0.75;
/// Opacity of the faint outlines (emitters, sinks).
const OUTLINE_ALPHA: f32 = 0.3;
/// Edge line colour, linear.
const LINE_RGB: [f32; 3] = [0.03, 0.035, 0.045];
/// Floor colour, linear, and opacity over the sky.
const FLOOR_RGB: [f32; 3] = [0.42, 0.42, 0.40];
const FLOOR_ALPHA: f32 = 0.7;
/// Grid line colour on the floor, linear.
const GRID_RGB: [f32; 3] = [0.16, 0.16, 0.16];
/// Largest darkening of the floor under liquid.
pub const SHADOW_STRENGTH: f32 = 0.6;
/// Half-width of each box pass of the shadow blur, grid cells.
pub const SHADOW_BLUR_CELLS: usize = 2;
/// Most shadow grid cells along a floor side.
const SHADOW_MAX_CELLS: usize = 512;
/// Fixed-point unit of shadow weights.
const SHADOW_ONE: f32 = 256.0;
/// Sky colours (sRGB) at the top and bottom of the image.
const SKY_TOP: [f32; 3] = [0.80, 0.84, 0.89];
const SKY_BOTTOM: [f32; 3] = [0.97, 0.97, 0.98];

/// The floor grid spacing for a floor `span` metres across: the largest of 1, 2 or 5 times a
/// power of ten that gives at least 5 grid cells, m.
pub fn grid_step(span: f64) -> f64 {
    if !(span > 0.0 && span.is_finite()) {
        return 1.0;
    }
    let target = span / 5.0;
    let p = 10f64.powf(target.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s <= target * (1.0 + 1e-9))
        .unwrap_or(p)
}

/// A fragment: ray distance (m), opacity, linear colour.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layer {
    pub t: f32,
    pub alpha: f32,
    pub rgb: [f32; 3],
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    p0: [f32; 2],
    p1: [f32; 2],
    inv_z0: f32,
    inv_z1: f32,
    /// Rows the line touches (with its width), pixels.
    y_min: f32,
    y_max: f32,
    /// Opacity: [`LINE_ALPHA`] for the region's edges, [`OUTLINE_ALPHA`] for outlines.
    alpha: f32,
}

#[derive(Debug, Clone)]
struct Floor {
    /// Axis normal to the floor, its coordinate, m.
    axis: usize,
    level: f32,
    /// The two in-plane axes and their ranges, m.
    a: usize,
    b: usize,
    lo: [f32; 2],
    hi: [f32; 2],
    step: f32,
    /// Contact shadow, see the module docs.
    shadow: Option<Shadow>,
}

/// Blurred particle density on a grid over the floor: `cells[i + n[0] * j]`, cell `(i, j)`
/// centred at `lo + (i + 0.5, j + 0.5) * cell`.
#[derive(Debug, Clone)]
struct Shadow {
    n: [usize; 2],
    cell: [f32; 2],
    /// Darkening factor per cell, `[1 - SHADOW_STRENGTH, 1]`.
    factor: Vec<f32>,
}

/// Everything but the spheres, precomputed for one view.
pub(crate) struct Backdrop {
    eye: [f32; 3],
    basis: [[f32; 3]; 3],
    focal: f32,
    height: f32,
    sky: [[f32; 3]; 2],
    floor: Option<Floor>,
    pub segments: Vec<Segment>,
}

fn f32x3(v: V3) -> [f32; 3] {
    [v[0] as f32, v[1] as f32, v[2] as f32]
}

impl Backdrop {
    pub fn new(view: &View, particles: &Particles) -> Self {
        let cam = &view.camera;
        let mut segments = Vec::new();
        let mut floor = None;
        if let Some([lo, hi]) = view.region {
            let corner = |k: usize| -> V3 {
                [
                    if k & 1 == 0 { lo[0] } else { hi[0] },
                    if k & 2 == 0 { lo[1] } else { hi[1] },
                    if k & 4 == 0 { lo[2] } else { hi[2] },
                ]
            };
            let size = dot(sub(hi, lo), sub(hi, lo)).sqrt();
            let near = 1e-4 * size.max(1e-6);
            for k in 0..8usize {
                for axis in 0..3 {
                    if k & (1 << axis) == 0 {
                        let a = cam.to_camera(corner(k));
                        let b = cam.to_camera(corner(k | (1 << axis)));
                        if let Some(s) = segment(cam, a, b, near) {
                            segments.push(s);
                        }
                    }
                }
            }
            if let Some((axis, side)) = view.floor {
                let (a, b) = ((axis + 1) % 3, (axis + 2) % 3);
                let span = (hi[a] - lo[a]).max(hi[b] - lo[b]);
                let mut fl = Floor {
                    axis,
                    level: if side == 0 { lo[axis] } else { hi[axis] } as f32,
                    a,
                    b,
                    lo: [lo[a] as f32, lo[b] as f32],
                    hi: [hi[a] as f32, hi[b] as f32],
                    step: grid_step(span) as f32,
                    shadow: None,
                };
                let height = (hi[axis] - lo[axis]) as f32;
                fl.shadow = shadow(&fl, height, view.sphere_radius, particles);
                floor = Some(fl);
            }
        }
        // Faint outlines of plain boxes (the scene's emitters and sinks).
        for &[lo, hi] in &view.outlines {
            let corner = |k: usize| -> V3 {
                std::array::from_fn(|a| if k & (1 << a) == 0 { lo[a] } else { hi[a] })
            };
            let size = dot(sub(hi, lo), sub(hi, lo)).sqrt();
            let near = 1e-4 * size.max(1e-6);
            for k in 0..8usize {
                for axis in 0..3 {
                    if k & (1 << axis) == 0 {
                        let a = cam.to_camera(corner(k));
                        let b = cam.to_camera(corner(k | (1 << axis)));
                        if let Some(mut s) = segment(cam, a, b, near) {
                            s.alpha = OUTLINE_ALPHA;
                            segments.push(s);
                        }
                    }
                }
            }
        }
        let lin = |c: [f32; 3]| c.map(srgb_to_linear);
        Backdrop {
            eye: f32x3(cam.eye),
            basis: [f32x3(cam.right), f32x3(cam.up), f32x3(cam.forward)],
            focal: cam.focal_px as f32,
            height: cam.height as f32,
            sky: [lin(SKY_TOP), lin(SKY_BOTTOM)],
            floor,
            segments,
        }
    }

    /// Sky colour (linear) of row `y`.
    #[inline]
    pub fn sky(&self, y: f32) -> [f32; 3] {
        let s = (y / self.height).clamp(0.0, 1.0);
        let [a, b] = self.sky;
        std::array::from_fn(|c| a[c] + (b[c] - a[c]) * s)
    }

    /// The floor fragment on the ray with camera-space unit direction `d`.
    #[inline]
    pub fn floor(&self, d: [f32; 3]) -> Option<Layer> {
        let f = self.floor.as_ref()?;
        let [r, u, w] = self.basis;
        let wd: [f32; 3] = std::array::from_fn(|k| r[k] * d[0] + u[k] * d[1] + w[k] * d[2]);
        let slope = wd[f.axis];
        let t = (f.level - self.eye[f.axis]) / slope;
        if !(t > 0.0 && t.is_finite()) {
            return None;
        }
        let ua = self.eye[f.a] + t * wd[f.a];
        let ub = self.eye[f.b] + t * wd[f.b];
        if !(ua >= f.lo[0] && ua <= f.hi[0] && ub >= f.lo[1] && ub <= f.hi[1]) {
            return None;
        }
        // World size of one pixel on the floor, along its most stretched direction.
        let foot = t / self.focal / slope.abs().max(0.05);
        let fade = ((f.step / foot - 4.0) / 8.0).clamp(0.0, 1.0);
        let mut grid = 0.0f32;
        if fade > 0.0 {
            for (u, lo) in [(ua, f.lo[0]), (ub, f.lo[1])] {
                let m = (u - lo) / f.step;
                let dist_px = (m - m.round()).abs() * f.step / foot;
                grid = grid.max((1.0 - dist_px).clamp(0.0, 1.0));
            }
        }
        let g = 0.55 * grid * fade;
        let dark = f
            .shadow
            .as_ref()
            .map_or(1.0, |s| s.factor_at(ua - f.lo[0], ub - f.lo[1]));
        Some(Layer {
            t,
            alpha: FLOOR_ALPHA,
            rgb: std::array::from_fn(|c| dark * (FLOOR_RGB[c] + (GRID_RGB[c] - FLOOR_RGB[c]) * g)),
        })
    }

    /// The strongest edge-line fragment at pixel centre `(px, py)`, among `segments`; `dz` is
    /// the forward component of the pixel's unit ray (turns depth into ray distance).
    #[inline]
    pub fn line(segments: &[Segment], px: f32, py: f32, dz: f32) -> Option<Layer> {
        let mut best: Option<Layer> = None;
        for s in segments {
            if py < s.y_min || py > s.y_max {
                continue;
            }
            let v = [s.p1[0] - s.p0[0], s.p1[1] - s.p0[1]];
            let w = [px - s.p0[0], py - s.p0[1]];
            let len2 = v[0] * v[0] + v[1] * v[1];
            let u = if len2 > 0.0 {
                ((w[0] * v[0] + w[1] * v[1]) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let e = [w[0] - u * v[0], w[1] - u * v[1]];
            let dist = (e[0] * e[0] + e[1] * e[1]).sqrt();
            let cov = (0.5 * LINE_WIDTH_PX + 0.5 - dist).clamp(0.0, 1.0);
            if cov <= 0.0 {
                continue;
            }
            let z = 1.0 / (s.inv_z0 + (s.inv_z1 - s.inv_z0) * u);
            // Slightly in front of what it touches, so edges stay on top of the floor.
            let t = 0.999 * z / dz;
            let alpha = s.alpha * cov.min(1.0);
            if best.is_none_or(|b| alpha > b.alpha || (alpha == b.alpha && t < b.t)) {
                best = Some(Layer {
                    t,
                    alpha,
                    rgb: LINE_RGB,
                });
            }
        }
        best
    }

    /// The segments that may touch rows `[y0, y1)`.
    pub fn segments_in_rows(&self, y0: f32, y1: f32, out: &mut Vec<Segment>) {
        out.clear();
        out.extend(
            self.segments
                .iter()
                .filter(|s| s.y_max >= y0 && s.y_min <= y1)
                .copied(),
        );
    }
}

impl Shadow {
    /// Bilinear darkening factor at floor coordinates `(u, v)` from the floor's lower corner, m.
    #[inline]
    fn factor_at(&self, u: f32, v: f32) -> f32 {
        let [nx, ny] = self.n;
        let fx = (u / self.cell[0] - 0.5).clamp(0.0, (nx - 1) as f32);
        let fy = (v / self.cell[1] - 0.5).clamp(0.0, (ny - 1) as f32);
        let (i, j) = ((fx as usize).min(nx - 1), (fy as usize).min(ny - 1));
        let (i1, j1) = ((i + 1).min(nx - 1), (j + 1).min(ny - 1));
        let (sx, sy) = (fx - i as f32, fy - j as f32);
        let at = |i: usize, j: usize| self.factor[i + nx * j];
        let top = at(i, j) + (at(i1, j) - at(i, j)) * sx;
        let bottom = at(i, j1) + (at(i1, j1) - at(i, j1)) * sx;
        top + (bottom - top) * sy
    }
}

/// The floor's contact shadow (see the module docs); `None` without particles.
fn shadow(f: &Floor, height: f32, radius: f32, particles: &Particles) -> Option<Shadow> {
    if particles.is_empty() {
        return None;
    }
    let span = [f.hi[0] - f.lo[0], f.hi[1] - f.lo[1]];
    // Cells of about one particle diameter, at most SHADOW_MAX_CELLS along a side.
    let n: [usize; 2] = std::array::from_fn(|k| {
        ((span[k] / (2.0 * radius)).ceil() as usize).clamp(1, SHADOW_MAX_CELLS)
    });
    let cell = [span[0] / n[0] as f32, span[1] / n[1] as f32];
    let falloff = 1.0 / (0.25 * height).max(f32::MIN_POSITIVE);
    let (pa, pb, ph) = (
        &particles.pos[f.a],
        &particles.pos[f.b],
        &particles.pos[f.axis],
    );
    let counts = (0..particles.len())
        .into_par_iter()
        .with_min_len(1 << 16)
        .fold(
            || vec![0u32; n[0] * n[1]],
            |mut acc, i| {
                let (u, v) = ((pa[i] - f.lo[0]) / cell[0], (pb[i] - f.lo[1]) / cell[1]);
                let h = (ph[i] - f.level).abs();
                if u >= 0.0 && v >= 0.0 && h.is_finite() {
                    let (iu, iv) = (u as usize, v as usize);
                    if iu < n[0] && iv < n[1] {
                        acc[iu + n[0] * iv] += ((-h * falloff).exp() * SHADOW_ONE) as u32;
                    }
                }
                acc
            },
        )
        .reduce(
            || vec![0u32; n[0] * n[1]],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x = x.saturating_add(y);
                }
                a
            },
        );
    let mut density: Vec<f32> = counts.iter().map(|&c| c as f32 / SHADOW_ONE).collect();
    let mut tmp = vec![0.0f32; density.len()];
    for _ in 0..3 {
        box_blur(&density, &mut tmp, n, [n[0], 1], n[0], SHADOW_BLUR_CELLS);
        box_blur(&tmp, &mut density, n, [1, n[0]], n[1], SHADOW_BLUR_CELLS);
    }
    // A cell holding about one particle diameter of liquid is fully shadowed.
    let factor = density
        .iter()
        .map(|&d| 1.0 - SHADOW_STRENGTH * (1.0 - (-1.5 * d).exp()))
        .collect();
    Some(Shadow { n, cell, factor })
}

/// One box-filter pass of half-width `r` along lines of `len` cells: `stride[0]` steps between
/// lines, `stride[1]` between cells of a line. Zero outside the grid.
fn box_blur(src: &[f32], dst: &mut [f32], n: [usize; 2], stride: [usize; 2], len: usize, r: usize) {
    let lines = n[0] * n[1] / len;
    let norm = 1.0 / (2 * r + 1) as f32;
    for line in 0..lines {
        let base = line * stride[0];
        for i in 0..len {
            let lo = i.saturating_sub(r);
            let hi = (i + r).min(len - 1);
            let sum: f32 = (lo..=hi).map(|k| src[base + k * stride[1]]).sum();
            dst[base + i * stride[1]] = sum * norm;
        }
    }
}

/// A camera-space segment `a`-`b`, clipped to `z >= near`, in pixels.
fn segment(cam: &super::Camera, a: V3, b: V3, near: f64) -> Option<Segment> {
    let (mut a, mut b) = (a, b);
    if a[2] < near && b[2] < near {
        return None;
    }
    let clip = |p: V3, q: V3| -> V3 {
        let s = (near - p[2]) / (q[2] - p[2]);
        std::array::from_fn(|k| p[k] + (q[k] - p[k]) * s)
    };
    if a[2] < near {
        a = clip(a, b);
    } else if b[2] < near {
        b = clip(b, a);
    }
    let (w, h, f) = (cam.width as f64, cam.height as f64, cam.focal_px);
    let px = |p: V3| -> [f32; 2] {
        [
            (0.5 * w + f * p[0] / p[2]) as f32,
            (0.5 * h - f * p[1] / p[2]) as f32,
        ]
    };
    let (p0, p1) = (px(a), px(b));
    let pad = LINE_WIDTH_PX;
    Some(Segment {
        p0,
        p1,
        inv_z0: (1.0 / a[2]) as f32,
        inv_z1: (1.0 / b[2]) as f32,
        y_min: p0[1].min(p1[1]) - pad,
        y_max: p0[1].max(p1[1]) + pad,
        alpha: LINE_ALPHA,
    })
}

/// Draws the legend bar (viridis, slow on the left) in the bottom-right corner, with a small
/// triangle above it at `peak` (the frame's top speed as a share of the colour range, clamped
/// to `[0, 1]`; `None` for no marker) and, under it, the speeds of its two ends in m/s
/// (`range`, drawn with the built-in [`super::font`] when the bar is wide enough).
pub fn draw_legend(img: &mut Image, peak: Option<f32>, range: [f32; 2]) {
    use super::font;
    let (w, h) = (img.width, img.height);
    let bar_w = (w / 6).clamp(32, 360);
    let bar_h = (h / 40).clamp(5, 20);
    let margin = (h / 30).max(4);
    let tri = (bar_h / 2 + 1).max(3);
    let scale = font::scale_for(h);
    let lo_text = font::speed_label(range[0]);
    let hi_text = format!("{} m/s", font::speed_label(range[1]));
    let (lo_w, text_h) = font::text_size(&lo_text, scale);
    let (hi_w, _) = font::text_size(&hi_text, scale);
    // Labels go under the bar when both fit side by side (with a gap) and there is room.
    let gap = scale;
    let labels =
        lo_w + hi_w + 4 * scale <= bar_w + 2 && bar_h + tri + text_h + gap + 2 * margin + 4 <= h;
    let below = if labels { text_h + gap } else { 0 };
    if bar_w + 2 * margin + 2 > w || bar_h + tri + below + 2 * margin + 4 > h {
        return;
    }
    let x0 = w - margin - bar_w - 2;
    let y0 = h - margin - below - bar_h - 2;
    if labels {
        let ty = y0 + bar_h + 2 + gap;
        font::draw_text(img, x0, ty, &lo_text, scale);
        font::draw_text(img, x0 + bar_w + 2 - hi_w, ty, &hi_text, scale);
    }
    let frame = [40u8, 44, 52];
    for y in y0..y0 + bar_h + 2 {
        for x in x0..x0 + bar_w + 2 {
            let inside = x > x0 && x < x0 + bar_w + 1 && y > y0 && y < y0 + bar_h + 1;
            let c = if inside {
                let s = (x - x0 - 1) as f32 / (bar_w - 1) as f32;
                viridis(s).map(|v| (v * 255.0 + 0.5) as u8)
            } else {
                frame
            };
            img.set_pixel(x, y, c);
        }
    }
    if let Some(p) = peak {
        let p = if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) };
        let cx = x0 + 1 + (p * (bar_w - 1) as f32).round() as u32;
        // Pointing down at the bar, its tip one pixel above the frame.
        for row in 0..tri {
            let y = y0 - 1 - tri + row;
            let half = tri - 1 - row;
            for x in cx.saturating_sub(half)..=(cx + half).min(w - 1) {
                img.set_pixel(x, y, frame);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::grid_step;

    #[test]
    fn grid_steps_are_round_and_give_five_to_ten_cells() {
        for (span, step) in [
            (1.0, 0.2),
            (0.23, 0.02),
            (0.5, 0.1),
            (3.0, 0.5),
            (12.0, 2.0),
        ] {
            let s = grid_step(span);
            assert!((s - step).abs() < 1e-12, "span {span}: {s}");
            let cells = span / s;
            assert!((5.0..=12.5).contains(&cells), "span {span}: {cells} cells");
        }
    }
}
