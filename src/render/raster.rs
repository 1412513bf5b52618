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
//! fragments in front of it; ties go to the lower particle index, and each strip visits its
//! spheres in particle order, so the result does not depend on scheduling.

use super::View;
use super::backdrop::{Backdrop, Layer, Segment, draw_legend};
use super::colormap::{LinearToSrgb, srgb_to_linear, viridis};
use super::image::Image;
use crate::sim::Particles;
use rayon::prelude::*;

/// Image rows per strip, the unit of parallel work.
pub const STRIP_ROWS: usize = 8;

/// Entries of the linear-light colour map table.
const COLOUR_STEPS: usize = 256;

/// Key light direction (towards the light), camera space: upper left, a little behind the eye.
const KEY: [f32; 3] = [-0.45, 0.7, -0.55];

/// One sphere on screen.
#[derive(Debug, Clone, Copy)]
struct Splat {
    /// Centre, camera space, m.
    c: [f32; 3],
    /// Colour table index of its speed.
    colour: u16,
    /// Pixel box `[x0, x1) x [y0, y1)`; empty when culled.
    x0: u16,
    x1: u16,
    y0: u16,
    y1: u16,
}

const CULLED: Splat = Splat {
    c: [0.0; 3],
    colour: 0,
    x0: 0,
    x1: 0,
    y0: 0,
    y1: 0,
};

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

/// Reusable per-strip buffers.
struct Scratch {
    dirs: Vec<[f32; 3]>,
    frags: Vec<PixelFrags>,
    segments: Vec<Segment>,
}

/// Projects every particle; returns its pixel box and camera-space centre.
fn splats(particles: &Particles, view: &View, colour_of: impl Fn(f32) -> u16 + Sync) -> Vec<Splat> {
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
            let x0 = to_px((0.5 * w + f * xl - 1.0).floor(), w);
            let x1 = to_px((0.5 * w + f * xh + 1.0).ceil(), w);
            let y0 = to_px((0.5 * h - f * yh - 1.0).floor(), h);
            let y1 = to_px((0.5 * h - f * yl + 1.0).ceil(), h);
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
/// `ids[starts[k]..starts[k + 1]]` in increasing particle order.
fn bin(splats: &[Splat], strips: usize) -> (Vec<usize>, Vec<u32>) {
    let mut starts = vec![0usize; strips + 1];
    for s in splats {
        if s.y0 < s.y1 {
            for k in s.y0 as usize / STRIP_ROWS..=(s.y1 as usize - 1) / STRIP_ROWS {
                starts[k + 1] += 1;
            }
        }
    }
    for k in 0..strips {
        starts[k + 1] += starts[k];
    }
    let mut fill = starts.clone();
    let mut ids = vec![0u32; starts[strips]];
    for (i, s) in splats.iter().enumerate() {
        if s.y0 < s.y1 {
            for k in s.y0 as usize / STRIP_ROWS..=(s.y1 as usize - 1) / STRIP_ROWS {
                ids[fill[k]] = i as u32;
                fill[k] += 1;
            }
        }
    }
    (starts, ids)
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
    let backdrop = Backdrop::new(view);
    let lut = LinearToSrgb::new();
    let ctx = Ctx {
        view,
        splats: &splats,
        colours: &colours,
        backdrop: &backdrop,
        lut: &lut,
    };
    let mut img = Image::new(cam.width, cam.height);
    img.rgb
        .par_chunks_mut(w * 3 * STRIP_ROWS)
        .enumerate()
        .for_each_init(
            || Scratch {
                dirs: Vec::with_capacity(w * STRIP_ROWS),
                frags: Vec::with_capacity(w * STRIP_ROWS),
                segments: Vec::new(),
            },
            |scratch, (k, rows)| ctx.strip(k, &ids[starts[k]..starts[k + 1]], rows, scratch),
        );
    if view.legend {
        draw_legend(&mut img);
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

fn normalize3(a: [f32; 3]) -> [f32; 3] {
    let l = dot3(a, a).sqrt();
    [a[0] / l, a[1] / l, a[2] / l]
}

impl Ctx<'_> {
    /// Renders strip `k` (rows `k * STRIP_ROWS ..`) into `out` (its RGB bytes).
    fn strip(&self, k: usize, ids: &[u32], out: &mut [u8], s: &mut Scratch) {
        let cam = &self.view.camera;
        let w = cam.width as usize;
        let rows = out.len() / (3 * w);
        let y_begin = k * STRIP_ROWS;
        let f = cam.focal_px as f32;
        let inv_f = 1.0 / f;
        let (half_w, half_h) = (0.5 * cam.width as f32, 0.5 * cam.height as f32);

        s.dirs.clear();
        for j in 0..rows {
            let yn = (half_h - (y_begin + j) as f32 - 0.5) * inv_f;
            for x in 0..w {
                let xn = (x as f32 + 0.5 - half_w) * inv_f;
                s.dirs.push(normalize3([xn, yn, 1.0]));
            }
        }
        s.frags.clear();
        s.frags.resize(rows * w, [NO_FRAG; 3]);

        let r = self.view.sphere_radius;
        let r2 = r * r;
        for &id in ids {
            let sp = &self.splats[id as usize];
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
                    let d = s.dirs[p];
                    let b = dot3(d, c);
                    let h2 = cc - b * b;
                    if h2 >= r_out2 {
                        continue;
                    }
                    let px = &mut s.frags[p];
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
                    let frag = Frag { t, cov, id };
                    if cov >= 1.0 {
                        px[0] = frag;
                        if px[1].t >= t {
                            px[1] = NO_FRAG;
                            px[2] = NO_FRAG;
                        } else if px[2].t >= t {
                            px[2] = NO_FRAG;
                        }
                    } else if t < px[1].t {
                        px[2] = px[1];
                        px[1] = frag;
                    } else if t < px[2].t {
                        px[2] = frag;
                    }
                }
            }
        }

        self.backdrop.segments_in_rows(
            y_begin as f32 - 1.0,
            (y_begin + rows) as f32 + 1.0,
            &mut s.segments,
        );
        let key = normalize3(KEY);
        for j in 0..rows {
            let y = y_begin + j;
            for x in 0..w {
                let p = j * w + x;
                let d = s.dirs[p];
                let mut layers = [Layer {
                    t: 0.0,
                    alpha: 0.0,
                    rgb: [0.0; 3],
                }; 5];
                let mut n = 0;
                for fr in s.frags[p] {
                    if fr.id != u32::MAX {
                        layers[n] = Layer {
                            t: fr.t,
                            alpha: fr.cov,
                            rgb: self.shade(fr.id, d, key),
                        };
                        n += 1;
                    }
                }
                if let Some(l) = self.backdrop.floor(d) {
                    layers[n] = l;
                    n += 1;
                }
                if let Some(l) = Backdrop::line(&s.segments, x as f32 + 0.5, y as f32 + 0.5, d[2]) {
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

    /// Linear colour of sphere `id` seen along unit ray `d`.
    #[inline]
    fn shade(&self, id: u32, d: [f32; 3], key: [f32; 3]) -> [f32; 3] {
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
        let n = [
            (t * d[0] - c[0]) / len,
            (t * d[1] - c[1]) / len,
            (t * d[2] - c[2]) / len,
        ];
        let diffuse = dot3(n, key).max(0.0);
        let fill = 0.22 + 0.16 * (0.5 + 0.5 * n[1]);
        let facing = (-dot3(n, d)).max(0.0);
        let rim = 0.55 + 0.45 * facing;
        let half = normalize3([key[0] - d[0], key[1] - d[1], key[2] - d[2]]);
        let spec = 0.3 * dot3(n, half).max(0.0).powi(32);
        let base = self.colours[sp.colour as usize];
        let light = (fill + 0.85 * diffuse) * rim;
        [
            base[0] * light + spec,
            base[1] * light + spec,
            base[2] * light + spec,
        ]
    }
}
