//! The pinhole camera: world space to pixels.
//!
//! Camera space is right-handed with `x` to the right, `y` up and `z` forward (into the scene),
//! in metres from the eye. A camera-space point `(x, y, z)`, `z > 0`, lands at pixel coordinates
//! `(W/2 + f x / z, H/2 - f y / z)`, where `f = (H/2) / tan(fov/2)` is the focal length in
//! pixels and pixel `(i, j)` covers `[i, i+1) x [j, j+1)` (its centre is `(i + 0.5, j + 0.5)`,
//! `j` grows downwards as in the PNG).
//!
//! A sphere of radius `r` centred at camera-space `(cx, cy, cz)`, `cz > r`, spans exactly the
//! slopes `x/z` between `(cx cz -+ r sqrt(cx^2 + cz^2 - r^2)) / (cz^2 - r^2)` (the two tangent
//! lines from the eye to its disc in the xz plane; likewise for y), which gives the tight screen
//! box of its elliptical silhouette (Mara and McGuire 2013).

use super::{RenderSettings, SettingError, bad};

pub(crate) type V3 = [f64; 3];

pub(crate) fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
pub(crate) fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
pub(crate) fn scale(a: V3, s: f64) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
pub(crate) fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub(crate) fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
pub(crate) fn norm(a: V3) -> f64 {
    dot(a, a).sqrt()
}
pub(crate) fn normalize(a: V3) -> V3 {
    scale(a, 1.0 / norm(a))
}

/// Elevation of the default view above the horizontal, degrees.
pub const DEFAULT_ELEVATION_DEGREES: f64 = 25.0;
/// Azimuth of the default view away from the normal of the region's long side, degrees.
pub const DEFAULT_AZIMUTH_DEGREES: f64 = 35.0;
/// Share of the image height (and width) the default view lets the region fill.
pub const DEFAULT_FILL: f64 = 0.86;

/// A pinhole camera with its image size.
#[derive(Debug, Clone, PartialEq)]
pub struct Camera {
    /// Eye position, m.
    pub eye: V3,
    /// Unit vector to the right of the image, world space.
    pub right: V3,
    /// Unit vector up in the image, world space.
    pub up: V3,
    /// Unit viewing direction, world space.
    pub forward: V3,
    /// Focal length, pixels: `(height / 2) / tan(fov / 2)`.
    pub focal_px: f64,
    /// Image width, pixels.
    pub width: u32,
    /// Image height, pixels.
    pub height: u32,
}

impl Camera {
    /// A camera at `eye` looking at `target`, `up` pointing up in the image (need not be
    /// perpendicular to the view), vertical field of view `fov_degrees`.
    pub fn look_at(
        eye: V3,
        target: V3,
        up: V3,
        fov_degrees: f64,
        width: u32,
        height: u32,
    ) -> Result<Camera, SettingError> {
        let d = sub(target, eye);
        if norm(d).is_nan() || norm(d) <= 0.0 {
            return Err(bad(
                "eye",
                eye,
                "the eye sits on the target; move render.eye away from render.target",
            ));
        }
        let forward = normalize(d);
        let up_n = normalize(up);
        let r = cross(forward, up_n);
        if norm(r).is_nan() || norm(r) <= 1e-6 {
            return Err(bad(
                "up",
                up,
                "is parallel to the viewing direction (target - eye); pick an up direction \
                 across the view, or move the eye",
            ));
        }
        let right = normalize(r);
        let up = cross(right, forward);
        let focal_px = 0.5 * height as f64 / (0.5 * fov_degrees.to_radians()).tan();
        Ok(Camera {
            eye,
            right,
            up,
            forward,
            focal_px,
            width,
            height,
        })
    }

    /// The camera the settings describe, filling in defaults from the liquid region `[lower,
    /// upper]` and gravity (see the module docs of [`crate::render`]).
    pub fn from_settings(
        s: &RenderSettings,
        region: [V3; 2],
        gravity: V3,
    ) -> Result<Camera, SettingError> {
        let [lo, hi] = region;
        let centre = scale(add(lo, hi), 0.5);
        let target = s.target.unwrap_or(centre);
        let g = norm(gravity);
        let up = s.up.unwrap_or(if g > 0.0 {
            scale(gravity, -1.0 / g)
        } else {
            [0.0, 0.0, 1.0]
        });
        let (eye, target) = match s.eye {
            Some(e) => (e, target),
            // Pan to centre the region's image only when the target is not given.
            None => default_eye(
                region,
                target,
                s.target.is_none(),
                up,
                s.fov_degrees,
                s.width,
                s.height,
            ),
        };
        Camera::look_at(eye, target, up, s.fov_degrees, s.width, s.height)
    }

    /// World point to camera space `(x right, y up, z forward)`, m.
    pub fn to_camera(&self, p: V3) -> V3 {
        let d = sub(p, self.eye);
        [dot(d, self.right), dot(d, self.up), dot(d, self.forward)]
    }

    /// Pixel coordinates of a world point (`(W/2, H/2)` is the image centre; pixel `(i, j)`
    /// covers `[i, i+1) x [j, j+1)`), or `None` behind the eye.
    pub fn project(&self, p: V3) -> Option<[f64; 2]> {
        let c = self.to_camera(p);
        (c[2] > 0.0).then(|| {
            [
                0.5 * self.width as f64 + self.focal_px * c[0] / c[2],
                0.5 * self.height as f64 - self.focal_px * c[1] / c[2],
            ]
        })
    }

    /// Unit direction, camera space, of the ray through pixel coordinates `(px, py)`.
    pub fn ray(&self, px: f64, py: f64) -> V3 {
        normalize([
            (px - 0.5 * self.width as f64) / self.focal_px,
            (0.5 * self.height as f64 - py) / self.focal_px,
            1.0,
        ])
    }
}

/// The default eye and target: the eye looks along the three-quarter direction at `target`,
/// from the distance where every corner of the region fits into [`DEFAULT_FILL`] of the image;
/// with `pan`, the target moves (across the view) until the region's image is centred.
fn default_eye(
    region: [V3; 2],
    target: V3,
    pan: bool,
    up: V3,
    fov: f64,
    width: u32,
    height: u32,
) -> (V3, V3) {
    let [lo, hi] = region;
    let up = normalize(up);
    // Horizontal axes: the two coordinate axes least aligned with up; "long" is the longer one.
    let mut axes = [0usize, 1, 2];
    axes.sort_by(|&a, &b| up[a].abs().total_cmp(&up[b].abs()));
    let (mut long, mut short) = (axes[0], axes[1]);
    if hi[short] - lo[short] > hi[long] - lo[long] {
        std::mem::swap(&mut long, &mut short);
    }
    let unit = |a: usize| -> V3 {
        let mut v = [0.0; 3];
        v[a] = 1.0;
        v
    };
    let (az, el) = (
        DEFAULT_AZIMUTH_DEGREES.to_radians(),
        DEFAULT_ELEVATION_DEGREES.to_radians(),
    );
    // Looking at the long side from the face of the short axis that puts the long axis
    // increasing to the right (the -y face for z up, the +z face for y up), turned by the
    // azimuth.
    let side = if dot(cross(unit(short), up), unit(long)) >= 0.0 {
        -1.0
    } else {
        1.0
    };
    let h0 = add(
        scale(unit(short), side * az.cos()),
        scale(unit(long), az.sin()),
    );
    let h = normalize(sub(h0, scale(up, dot(h0, up))));
    let dir = normalize(add(scale(h, el.cos()), scale(up, el.sin())));
    let forward = scale(dir, -1.0);
    let right = normalize(cross(forward, up));
    let cam_up = cross(right, forward);
    let ty = (0.5 * fov.to_radians()).tan() * DEFAULT_FILL;
    let tx = ty * width as f64 / height as f64;
    let corners: Vec<V3> = (0..8)
        .map(|k| {
            [
                if k & 1 == 0 { lo[0] } else { hi[0] },
                if k & 2 == 0 { lo[1] } else { hi[1] },
                if k & 4 == 0 { lo[2] } else { hi[2] },
            ]
        })
        .collect();
    // Fit the distance, then pan so the region's image is centred, twice.
    let size = norm(sub(hi, lo)).max(1e-9);
    let mut centre = target;
    let mut eye = target;
    for _ in 0..if pan { 3 } else { 1 } {
        let mut dist: f64 = 0.1 * size;
        for &q in &corners {
            let q = sub(q, centre);
            let (x, y, z) = (dot(q, right), dot(q, cam_up), dot(q, forward));
            dist = dist.max(x.abs() / tx - z).max(y.abs() / ty - z);
        }
        eye = add(centre, scale(dir, dist));
        let (mut sx, mut sy) = ([f64::MAX, f64::MIN], [f64::MAX, f64::MIN]);
        for &q in &corners {
            let q = sub(q, eye);
            let z = dot(q, forward);
            let (x, y) = (dot(q, right) / z, dot(q, cam_up) / z);
            sx = [sx[0].min(x), sx[1].max(x)];
            sy = [sy[0].min(y), sy[1].max(y)];
        }
        let shift = add(
            scale(right, 0.5 * (sx[0] + sx[1]) * dist),
            scale(cam_up, 0.5 * (sy[0] + sy[1]) * dist),
        );
        if pan {
            centre = add(centre, shift);
            eye = add(eye, shift);
        }
    }
    (eye, centre)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centre_projects_to_image_centre_and_axes_are_orthonormal() {
        let c =
            Camera::look_at([3.0, -4.0, 2.0], [0.0; 3], [0.0, 0.0, 1.0], 40.0, 200, 100).unwrap();
        let p = c.project([0.0; 3]).unwrap();
        assert!((p[0] - 100.0).abs() < 1e-9 && (p[1] - 50.0).abs() < 1e-9);
        assert!((dot(c.right, c.up)).abs() < 1e-12 && (norm(c.up) - 1.0).abs() < 1e-12);
        // Up in the world is up in the image (smaller row index).
        assert!(c.project([0.0, 0.0, 0.5]).unwrap()[1] < 50.0);
    }

    #[test]
    fn parallel_up_is_an_error() {
        let e = Camera::look_at([0.0, 0.0, 5.0], [0.0; 3], [0.0, 0.0, 1.0], 40.0, 64, 64);
        assert_eq!(e.unwrap_err().field, "up");
    }

    #[test]
    fn default_view_has_up_against_gravity_and_the_long_axis_to_the_right() {
        let region = [[0.0, 0.0, 0.0], [2.0, 1.0, 0.5]];
        for gravity in [[0.0, 0.0, -9.8], [0.0, -9.8, 0.0]] {
            let c = Camera::from_settings(&RenderSettings::default(), region, gravity).unwrap();
            let up = scale(gravity, -1.0 / 9.8);
            let p0 = c.project([1.0, 0.5, 0.25]).unwrap();
            let pu = c.project(add([1.0, 0.5, 0.25], scale(up, 0.1))).unwrap();
            let px = c.project([1.1, 0.5, 0.25]).unwrap();
            assert!(pu[1] < p0[1], "up is not up for gravity {gravity:?}");
            assert!(
                px[0] > p0[0],
                "+x is not to the right for gravity {gravity:?}"
            );
            // Every corner is inside the image.
            for k in 0..8 {
                let q = [
                    region[k & 1][0],
                    region[(k >> 1) & 1][1],
                    region[(k >> 2) & 1][2],
                ];
                let p = c.project(q).unwrap();
                assert!(
                    p[0] > 0.0 && p[0] < 960.0 && p[1] > 0.0 && p[1] < 540.0,
                    "{p:?}"
                );
            }
        }
    }
}
