//! The sphere ray-caster: projection, strip binning, per-pixel fragments, shading, composition.
//!
//! Per pixel the ray is `t d` from the eye, `d` a unit camera-space direction. For a sphere at
//! camera-space `c`, radius `r`: `b = d . c` is the ray distance of the closest approach and
//! `h^2 = |c|^2 - b^2` the squared distance of the centre from the ray. The ray hits when
//! `h < r`, at `t = b - sqrt(r^2 - h^2)`. With `p = c_z / f` the size of a pixel at the
//! sphere's depth, the sphere covers `0.5 + (r - h) / p` of the pixel (clamped to `[0, 1]`, and
//! to the sphere's projected area `pi (r/p)^2` for spheres smaller than a pixel); pixels whose
//! ray misses but passes within half a pixel get a partial fragment at `t = b` whose normal is
//! the silhouette's. A pixel keeps its nearest opaque fragment and the two nearest partial
//! fragments in front of it (see `insert` for how further partial fragments merge). Each
//! strip visits its spheres roughly front to back (quantised depth, then particle index), an
//! order fixed by the data alone, and ties in distance keep the earlier fragment, so the result
//! does not depend on scheduling or thread count.

use super::View;
use super::backdrop::{Backdrop, Layer, Segment, draw_legend};
use super::colormap::{LinearToSrgb, srgb_to_linear, viridis};
use super::splat::{STRIP_ROWS, Splat, bin, splats, strip_lists};
use crate::image::Image;
use crate::particles::Particles;
use rayon::prelude::*;

/// Entries of the linear-light colour map table.
const COLOUR_STEPS: usize = 256;

/// Key light direction (towards the light), camera space: upper left, a little behind the eye.
const KEY: [f32; 3] = [-0.45, 0.7, -0.55];

/// A sphere fragment: ray distance (m), coverage, particle index.
#[derive(Debug, Clone, Copy)]
struct Frag {
    t: f32,
    cov: f32,
    id: u32,
}

const NO_FRAG: Frag = Frag {
    t: f32::INFINITY,
    cov: 0.0,
    id: u32::MAX,
};

/// Per pixel: nearest opaque fragment, then the two nearest partial ones in front of it.
type PixelFrags = [Frag; 3];

/// Adds a fragment in front of the pixel's opaque one. An opaque fragment drops the partial
/// ones behind it. A third partial fragment merges with the farther of the two kept: the merged
/// fragment takes the nearer one's distance and sphere and their combined coverage, the sum
/// when they lie within `adjacent` of each other (neighbouring spheres of one body of liquid
/// cover complementary parts of the pixel) and `1 - (1 - a)(1 - b)` otherwise; a merged
/// coverage of 1 makes it opaque. So a pixel inside the liquid never shows the sky through
/// the seams between spheres.
#[inline]
fn insert(px: &mut PixelFrags, f: Frag, adjacent: f32) {
    if f.cov >= 1.0 {
        set_opaque(px, f);
        return;
    }
    let (near, a, b) = if f.t < px[1].t {
        (f, px[1], px[2])
    } else if f.t < px[2].t {
        (px[1], f, px[2])
    } else {
        (px[1], px[2], f)
    };
    px[1] = near;
    if b.id == u32::MAX {
        px[2] = a;
        return;
    }
    let cov = if b.t - a.t < adjacent {
        (a.cov + b.cov).min(1.0)
    } else {
        1.0 - (1.0 - a.cov) * (1.0 - b.cov)
    };
    let merged = Frag {
        t: a.t,
        cov,
        id: a.id,
    };
    if cov >= 1.0 {
        px[2] = NO_FRAG;
        set_opaque(px, merged);
    } else {
        px[2] = merged;
    }
}

/// Makes `f` the pixel's opaque fragment and drops partial fragments behind it.
#[inline]
fn set_opaque(px: &mut PixelFrags, f: Frag) {
    px[0] = f;
    if px[1].t >= f.t {
        px[1] = NO_FRAG;
        px[2] = NO_FRAG;
    } else if px[2].t >= f.t {
        px[2] = NO_FRAG;
    }
}

/// Renders particles as lit spheres (see the module docs of [`crate::render`]).
pub fn render(particles: &Particles, view: &View) -> Image {
    let cam = &view.camera;
    let (w, h) = (cam.width as usize, cam.height as usize);
    let [lo, hi] = view.speed_range;
    let inv_span = 1.0 / (hi - lo).max(f32::MIN_POSITIVE);
    let colour_of = |speed: f32| -> u16 {
        let s = if speed.is_nan() {
            1.0
        } else {
            ((speed - lo) * inv_span).clamp(0.0, 1.0)
        };
        (s * (COLOUR_STEPS - 1) as f32 + 0.5) as u16
    };
    let colours: Vec<[f32; 3]> = (0..COLOUR_STEPS)
        .map(|i| viridis(i as f32 / (COLOUR_STEPS - 1) as f32).map(srgb_to_linear))
        .collect();
    let splats = splats(particles, view, colour_of);
    let strips = h.div_ceil(STRIP_ROWS);
    let (starts, ids) = bin(&splats, strips);
    let lists = strip_lists(&splats, &starts, &ids);
    drop(ids);
    let backdrop = Backdrop::new(view, particles);
    let lut = LinearToSrgb::new();
    let ctx = Ctx {
        view,
        splats: &splats,
        colours: &colours,
        backdrop: &backdrop,
        lut: &lut,
    };

    // Pass 1: sphere fragments and the depth of the liquid's front surface, per strip.
    let mut frags = vec![[NO_FRAG; 3]; w * h];
    let mut depth = vec![f32::INFINITY; w * h];
    frags
        .par_chunks_mut(w * STRIP_ROWS)
        .zip(depth.par_chunks_mut(w * STRIP_ROWS))
        .enumerate()
        .for_each(|(k, (fr, dp))| ctx.fragments(k, &lists[k], fr, dp));

    // Pass 2: the smoothed front surface, for body normals.
    let smooth = smooth_depth(&depth, w, h, view, &splats);

    // Pass 3: shade and compose.
    let mut img = Image::new(cam.width, cam.height);
    img.rgb
        .par_chunks_mut(w * 3 * STRIP_ROWS)
        .enumerate()
        .for_each_init(Vec::new, |segments, (k, rows)| {
            ctx.compose(k, &frags, &smooth, rows, segments)
        });
    if view.legend {
        // The frame's top speed, in a fixed order (max is exact, so any order would do).
        let peak = (0..particles.len())
            .map(|i| {
                let [vx, vy, vz] = particles.velocity(i);
                (vx * vx + vy * vy + vz * vz).sqrt()
            })
            .filter(|v| !v.is_nan())
            .fold(None, |m: Option<f32>, v| Some(m.map_or(v, |m| m.max(v))));
        draw_legend(
            &mut img,
            peak.map(|v| (v - lo) * inv_span),
            view.speed_range,
        );
    }
    img
}

/// Read-only data shared by all strips.
struct Ctx<'a> {
    view: &'a View,
    splats: &'a [Splat],
    colours: &'a [[f32; 3]],
    backdrop: &'a Backdrop,
    lut: &'a LinearToSrgb,
}

#[inline]
fn dot3(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[inline]
fn normalize3(a: [f32; 3]) -> [f32; 3] {
    let l = dot3(a, a).sqrt();
    [a[0] / l, a[1] / l, a[2] / l]
}

#[inline]
fn cross3(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Camera-space ray direction through the centre of pixel `(x, y)`, scaled to unit depth
/// (`z = 1`).
#[inline]
fn ray_at_unit_depth(cam: &super::Camera, x: usize, y: usize) -> [f32; 3] {
    let inv_f = 1.0 / cam.focal_px as f32;
    [
        (x as f32 + 0.5 - 0.5 * cam.width as f32) * inv_f,
        (0.5 * cam.height as f32 - y as f32 - 0.5) * inv_f,
        1.0,
    ]
}

/// Radius, pixels, of the depth smoothing: about two and a half sphere radii at the mean
/// depth of the visible spheres, between 1 and 12.
fn smoothing_radius(view: &View, splats: &[Splat]) -> usize {
    // Mean depth in f64 over a fixed order: the same for any thread count.
    let (sum, n) = splats
        .iter()
        .filter(|s| s.y0 < s.y1)
        .fold((0.0f64, 0usize), |(a, n), s| (a + s.c[2] as f64, n + 1));
    if n == 0 {
        return 1;
    }
    let z = (sum / n as f64) as f32;
    let r_px = view.sphere_radius * view.camera.focal_px as f32 / z;
    (2.5 * r_px).round().clamp(1.0, 12.0) as usize
}

/// The liquid's front depth smoothed by a separable box filter of [`smoothing_radius`] that
/// only averages samples within four sphere radii of the centre's depth (a bilateral filter
/// in the spirit of screen-space fluid rendering, van der Laan, Green and Sainz 2009), so
/// separate bodies of liquid stay separate. Infinite where there is no liquid.
fn smooth_depth(depth: &[f32], w: usize, h: usize, view: &View, splats: &[Splat]) -> Vec<f32> {
    let rad = smoothing_radius(view, splats) as isize;
    let tol = 4.0 * view.sphere_radius;
    let pass = |src: &[f32], reference: &[f32], horizontal: bool| -> Vec<f32> {
        let mut out = vec![f32::INFINITY; w * h];
        out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for (x, o) in row.iter_mut().enumerate() {
                let z0 = reference[y * w + x];
                if !z0.is_finite() {
                    continue;
                }
                let (mut sum, mut n) = (0.0f32, 0u32);
                for k in -rad..=rad {
                    let (xs, ys) = if horizontal {
                        (x as isize + k, y as isize)
                    } else {
                        (x as isize, y as isize + k)
                    };
                    if xs < 0 || ys < 0 || xs >= w as isize || ys >= h as isize {
                        continue;
                    }
                    let i = ys as usize * w + xs as usize;
                    let z = src[i];
                    if (reference[i] - z0).abs() < tol && z.is_finite() {
                        sum += z;
                        n += 1;
                    }
                }
                *o = sum / n as f32;
            }
        });
        out
    };
    let across = pass(depth, depth, true);
    pass(&across, depth, false)
}

/// Weight of the sphere's own normal against the body normal in the lighting.
const SPHERE_NORMAL_WEIGHT: f32 = 0.45;

impl Ctx<'_> {
    /// Sphere fragments of strip `k` (rows `k * STRIP_ROWS ..`) into `frags`, and the camera
    /// depth of each pixel's front liquid fragment (at least half covered) into `depth`.
    fn fragments(
        &self,
        k: usize,
        list: &[(u32, Splat)],
        frags: &mut [PixelFrags],
        depth: &mut [f32],
    ) {
        let cam = &self.view.camera;
        let w = cam.width as usize;
        let rows = frags.len() / w;
        let y_begin = k * STRIP_ROWS;
        let inv_f = 1.0 / cam.focal_px as f32;
        let dirs: Vec<[f32; 3]> = (0..rows * w)
            .map(|p| normalize3(ray_at_unit_depth(cam, p % w, y_begin + p / w)))
            .collect();

        let r = self.view.sphere_radius;
        let r2 = r * r;
        for &(id, ref sp) in list {
            let c = sp.c;
            let cc = dot3(c, c);
            let ps = c[2] * inv_f;
            let inv_ps = 1.0 / ps;
            let half = 0.5 * ps;
            let r_out2 = (r + half) * (r + half);
            let r_in2 = if r > half {
                (r - half) * (r - half)
            } else {
                -1.0
            };
            let rp = r * inv_ps;
            let peak = (std::f32::consts::PI * rp * rp).min(1.0);
            let ya = (sp.y0 as usize).max(y_begin);
            let yb = (sp.y1 as usize).min(y_begin + rows);
            for y in ya..yb {
                let row = (y - y_begin) * w;
                for x in sp.x0 as usize..sp.x1 as usize {
                    let p = row + x;
                    let d = dirs[p];
                    let b = dot3(d, c);
                    let h2 = cc - b * b;
                    if h2 >= r_out2 {
                        continue;
                    }
                    let px = &mut frags[p];
                    // Cheap early rejection: the sphere's nearest point on this ray is at
                    // least b - r away.
                    if b - r >= px[0].t {
                        continue;
                    }
                    let (t, cov) = if h2 <= r_in2 {
                        (b - (r2 - h2).sqrt(), peak)
                    } else {
                        let h = h2.max(0.0).sqrt();
                        let cov = (0.5 + (r - h) * inv_ps).min(peak);
                        let t = if h2 < r2 { b - (r2 - h2).sqrt() } else { b };
                        (t, cov)
                    };
                    if t >= px[0].t || cov <= 0.0 {
                        continue;
                    }
                    insert(px, Frag { t, cov, id }, 2.0 * r);
                }
            }
        }
        for (p, (px, z)) in frags.iter().zip(depth.iter_mut()).enumerate() {
            let front = px
                .iter()
                .filter(|f| f.id != u32::MAX && f.cov >= 0.5)
                .fold(f32::INFINITY, |m, f| m.min(f.t));
            *z = front * dirs[p][2];
        }
    }

    /// The body normal (camera space, facing the eye) at pixel `(x, y)` from the smoothed
    /// depth, using the one-sided differences with the smaller depth step.
    fn body_normal(&self, smooth: &[f32], x: usize, y: usize) -> Option<[f32; 3]> {
        let cam = &self.view.camera;
        let (w, h) = (cam.width as usize, cam.height as usize);
        let z = smooth[y * w + x];
        if !z.is_finite() {
            return None;
        }
        let at = |x: usize, y: usize| -> Option<[f32; 3]> {
            let z = smooth[y * w + x];
            z.is_finite()
                .then(|| ray_at_unit_depth(cam, x, y).map(|v| v * z))
        };
        let p = ray_at_unit_depth(cam, x, y).map(|v| v * z);
        let diff = |a: Option<[f32; 3]>, b: Option<[f32; 3]>| -> Option<[f32; 3]> {
            // a is the forward neighbour, b the backward one.
            let fwd = a.map(|a| [a[0] - p[0], a[1] - p[1], a[2] - p[2]]);
            let bwd = b.map(|b| [p[0] - b[0], p[1] - b[1], p[2] - b[2]]);
            match (fwd, bwd) {
                (Some(f), Some(b)) => Some(if f[2].abs() <= b[2].abs() { f } else { b }),
                (f, b) => f.or(b),
            }
        };
        let dx = diff(
            (x + 1 < w).then(|| at(x + 1, y)).flatten(),
            (x > 0).then(|| at(x - 1, y)).flatten(),
        )?;
        let dy = diff(
            (y + 1 < h).then(|| at(x, y + 1)).flatten(),
            (y > 0).then(|| at(x, y - 1)).flatten(),
        )?;
        let n = cross3(dx, dy);
        let l = dot3(n, n).sqrt();
        if l.is_nan() || l <= 0.0 {
            return None;
        }
        // Face the eye (camera looks along +z).
        let s = if n[2] > 0.0 { -1.0 / l } else { 1.0 / l };
        Some(n.map(|v| v * s))
    }

    /// Shades and composes strip `k` into `out` (its RGB bytes).
    fn compose(
        &self,
        k: usize,
        frags: &[PixelFrags],
        smooth: &[f32],
        out: &mut [u8],
        segments: &mut Vec<Segment>,
    ) {
        let cam = &self.view.camera;
        let w = cam.width as usize;
        let rows = out.len() / (3 * w);
        let y_begin = k * STRIP_ROWS;
        self.backdrop.segments_in_rows(
            y_begin as f32 - 1.0,
            (y_begin + rows) as f32 + 1.0,
            segments,
        );
        let key = normalize3(KEY);
        for j in 0..rows {
            let y = y_begin + j;
            for x in 0..w {
                let p = j * w + x;
                let d = normalize3(ray_at_unit_depth(cam, x, y));
                let mut layers = [Layer {
                    t: 0.0,
                    alpha: 0.0,
                    rgb: [0.0; 3],
                }; 5];
                let mut n = 0;
                let px = frags[y * w + x];
                if px.iter().any(|f| f.id != u32::MAX) {
                    let body = self.body_normal(smooth, x, y);
                    for fr in px {
                        if fr.id != u32::MAX {
                            layers[n] = Layer {
                                t: fr.t,
                                alpha: fr.cov,
                                rgb: self.shade(fr.id, d, key, body),
                            };
                            n += 1;
                        }
                    }
                }
                if let Some(l) = self.backdrop.floor(d) {
                    layers[n] = l;
                    n += 1;
                }
                if let Some(l) = Backdrop::line(segments, x as f32 + 0.5, y as f32 + 0.5, d[2]) {
                    layers[n] = l;
                    n += 1;
                }
                let layers = &mut layers[..n];
                // Insertion sort by distance; stable, so equal distances keep a fixed order.
                for i in 1..layers.len() {
                    let mut k = i;
                    while k > 0 && layers[k].t < layers[k - 1].t {
                        layers.swap(k, k - 1);
                        k -= 1;
                    }
                }
                let mut acc = [0.0f32; 3];
                let mut trans = 1.0f32;
                for l in layers.iter() {
                    for (a, c) in acc.iter_mut().zip(l.rgb) {
                        *a += trans * l.alpha * c;
                    }
                    trans *= 1.0 - l.alpha;
                }
                let sky = self.backdrop.sky(y as f32 + 0.5);
                for c in 0..3 {
                    out[3 * p + c] = self.lut.get(acc[c] + trans * sky[c]);
                }
            }
        }
    }

    /// Linear colour of sphere `id` seen along unit ray `d`, lit with a blend of its own
    /// normal and the liquid body's normal `body` (when known).
    #[inline]
    fn shade(&self, id: u32, d: [f32; 3], key: [f32; 3], body: Option<[f32; 3]>) -> [f32; 3] {
        let sp = &self.splats[id as usize];
        let c = sp.c;
        let r = self.view.sphere_radius;
        let b = dot3(d, c);
        let h2 = (dot3(c, c) - b * b).max(0.0);
        let (t, len) = if h2 < r * r {
            (b - (r * r - h2).sqrt(), r)
        } else {
            (b, h2.sqrt().max(f32::MIN_POSITIVE))
        };
        let own = [
            (t * d[0] - c[0]) / len,
            (t * d[1] - c[1]) / len,
            (t * d[2] - c[2]) / len,
        ];
        let n = match body {
            Some(nb) => normalize3(std::array::from_fn(|k| {
                SPHERE_NORMAL_WEIGHT * own[k] + (1.0 - SPHERE_NORMAL_WEIGHT) * nb[k]
            })),
            None => own,
        };
        let diffuse = dot3(n, key).max(0.0);
        let fill = 0.3 + 0.2 * (0.5 + 0.5 * n[1]);
        // Rim darkening from the sphere's own normal separates touching spheres.
        let facing = (-dot3(own, d)).max(0.0);
        let rim = 0.55 + 0.45 * facing;
        let half = normalize3([key[0] - d[0], key[1] - d[1], key[2] - d[2]]);
        // Highlights fade out on spheres under a few pixels across, where they would only
        // sparkle.
        let r_px = r * self.view.camera.focal_px as f32 / c[2];
        let spec = 0.3 * ((r_px - 1.5) / 2.5).clamp(0.0, 1.0) * dot3(own, half).max(0.0).powi(32);
        let base = self.colours[sp.colour as usize];
        let light = (fill + 0.85 * diffuse) * rim;
        [
            base[0] * light + spec,
            base[1] * light + spec,
            base[2] * light + spec,
        ]
    }
}
