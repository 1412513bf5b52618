//! Sphere previews: a headless CPU render of the particles as lit spheres, written as PNG.
//!
//! # Method
//! Each particle is a sphere of radius `r` (default: half the particle spacing, so neighbours at
//! rest just touch). The renderer is a tile-binned sphere ray-caster ("sphere impostors" in the
//! GPU literature):
//!
//! 1. **Project** ([`camera`]): every sphere's exact screen bounding box comes from the tangent
//!    lines of its silhouette, which under perspective is an ellipse (Mara and McGuire, *2D
//!    Polyhedral Bounds of a Clipped, Perspective-Projected 3D Sphere*, JCGT 2013).
//! 2. **Bin** ([`raster`]): boxes are sorted into horizontal strips of [`splat::STRIP_ROWS`]
//!    rows (a stable counting sort), then each strip's spheres are ordered front to back by a
//!    stable counting sort on quantised depth (ties keep particle order).
//! 3. **Ray-cast** ([`raster`]): strips run in parallel (rayon). For each pixel of a sphere's box
//!    the ray through the pixel centre is intersected with the sphere. The distance `h` from the
//!    sphere centre to the ray gives an analytic coverage `0.5 + (r - h) / pixel size`, clamped
//!    to `[0, 1]`, which anti-aliases silhouettes without supersampling. Each pixel keeps its
//!    nearest opaque hit and the two nearest partial (edge) hits in front of it (further edge
//!    hits merge into the second), so occlusion is exact and edges blend over whatever is
//!    behind them; front-to-back order lets most hidden spheres fail the depth test early.
//! 4. **Body normals** ([`raster`]): the depth of the liquid's front surface is smoothed with a
//!    depth-aware filter a few sphere radii wide (as in screen-space fluid rendering, van der
//!    Laan, Green and Sainz, I3D 2009) and differentiated into a normal per pixel. Lighting
//!    blends it with each sphere's own normal, so the faces of a body of liquid made of
//!    thousands of tiny spheres still read as lit or shaded surfaces.
//! 5. **Shade and compose** ([`raster`], [`backdrop`]): spheres are lit in linear light (a key
//!    light from the upper left, a hemisphere fill, a Blinn-Phong highlight on spheres more than
//!    a few pixels wide and a rim darkening that separates touching spheres), coloured by speed
//!    with [`colormap`]; the fragments of a pixel (up to three sphere fragments, the floor with
//!    its soft contact shadow, a box edge) are sorted by ray distance and composed front to
//!    back over a sky gradient, then converted to sRGB.
//!
//! Each strip is computed by one thread from data that does not depend on the thread count, in
//! a fixed order, so the image is byte-identical for any number of threads.
//!
//! # Default framing
//! Without a camera in the scene, the view is a three-quarter view from above (elevation 25
//! degrees, azimuth 35 degrees off the long horizontal side) of the liquid region (the domain
//! minus its one-cell wall layer), with the image's up axis opposite to gravity and the camera
//! distance fitted so the whole region fills the frame. The region's twelve edges are drawn as
//! thin lines (hidden where liquid is in front of them), and the floor (the wall gravity
//! points to) is lightly shaded, with grid lines every [`backdrop::grid_step`] metres (a power
//! of ten times 1, 2 or 5, chosen so about 5 to 10 lines span the floor) to give the scale.
//!
//! # Colour
//! Speed `|v|` maps linearly onto the viridis colour map ([`colormap`]) between
//! `speed_range[0]` (dark violet) and `speed_range[1]` (yellow); speeds outside clamp. The
//! range is fixed for a whole sequence (default `[0, sqrt(2 |g| H)]`, the speed of a free fall
//! over the liquid region's height `H`, or the fastest source velocity if larger) so a colour
//! means the same speed in every frame. A small legend bar in the bottom-right corner shows the
//! map, slow on the left, with a small triangle above it marking the frame's top speed (at the
//! right end when it is off the scale) and the speeds of its two ends in m/s under it; the
//! top-left corner carries the frame number and its time ([`stamp`]). Both are drawn with a
//! built-in 5 x 7 bitmap font ([`font`]) and switched off together by `legend: false`.
//!
//! Layer 2 (a stage beside sim, surface and output, importing none of them): imports error,
//! particles, image and geometry. Owns [`RenderSettings`] and [`View`]; takes plain data
//! (particles + view -> [`Image`]); the PNG encoding is `output::png`'s.

pub mod backdrop;
pub mod camera;
pub mod colormap;
pub mod font;
pub mod outline;
pub use crate::image;
pub mod raster;
mod splat;

pub use crate::image::Image;
pub use camera::Camera;

use crate::geometry::Domain;
use crate::particles::Particles;
use serde::{Deserialize, Serialize};

/// Largest image side, pixels.
pub const MAX_SIDE: u32 = 16384;

/// The scene's `render` section: how sphere previews look. Every field is optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderSettings {
    /// Image width, pixels, 16 to 16384. (default: `960`)
    #[serde(default = "default_width")]
    pub width: u32,
    /// Image height, pixels, 16 to 16384. (default: `540`)
    #[serde(default = "default_height")]
    pub height: u32,
    /// Camera position `[x, y, z]`, m. (default: a three-quarter view from above that fits the
    /// whole liquid region, see the module docs)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eye: Option<[f64; 3]>,
    /// Point the camera looks at `[x, y, z]`, m. (default: the centre of the liquid region)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<[f64; 3]>,
    /// Direction that points up in the image `[x, y, z]` (any length). (default: opposite to
    /// gravity; `[0, 0, 1]` without gravity)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<[f64; 3]>,
    /// Vertical field of view, degrees, between 1 and 170. (default: `35`)
    #[serde(default = "default_fov")]
    pub fov_degrees: f64,
    /// Sphere radius, m. (default: half the particle spacing, `cell_size / 4`)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sphere_radius: Option<f64>,
    /// Speeds `[slow, fast]`, m/s, mapped to the two ends of the colour map; fixed for the
    /// whole sequence. (default: `[0, max(sqrt(2 |g| H), fastest source speed)]`, `H` the
    /// height of the liquid region along gravity; `[0, 1]` if that is zero)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_range: Option<[f64; 2]>,
    /// Draw the liquid region's edges and shade its floor. (default: `true`)
    #[serde(default = "yes")]
    pub show_domain: bool,
    /// Draw the colour legend bar (with its speeds in m/s) in the bottom-right corner and the
    /// frame/time stamp in the top-left one. (default: `true`)
    #[serde(default = "yes")]
    pub legend: bool,
}

impl Default for RenderSettings {
    fn default() -> Self {
        Self {
            width: default_width(),
            height: default_height(),
            eye: None,
            target: None,
            up: None,
            fov_degrees: default_fov(),
            sphere_radius: None,
            speed_range: None,
            show_domain: true,
            legend: true,
        }
    }
}

fn default_width() -> u32 {
    960
}
fn default_height() -> u32 {
    540
}
fn default_fov() -> f64 {
    35.0
}
fn yes() -> bool {
    true
}

/// A render setting that cannot be used, with the field and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("render.{field} = {value}: {fix}")]
pub struct SettingError {
    /// Field name inside the scene's `render` section.
    pub field: &'static str,
    /// The offending value, as written.
    pub value: String,
    /// What is wrong and how to fix it.
    pub fix: String,
}

fn bad(field: &'static str, value: impl std::fmt::Debug, fix: impl Into<String>) -> SettingError {
    SettingError {
        field,
        value: format!("{value:?}"),
        fix: fix.into(),
    }
}

fn finite3(v: &[f64; 3]) -> bool {
    v.iter().all(|x| x.is_finite())
}

impl RenderSettings {
    /// Checks every field on its own (the camera's geometry is checked by [`View::new`]).
    pub fn validate(&self) -> Result<(), SettingError> {
        for (field, v) in [("width", self.width), ("height", self.height)] {
            if !(16..=MAX_SIDE).contains(&v) {
                return Err(bad(
                    field,
                    v,
                    format!("must be between 16 and {MAX_SIDE} pixels (e.g. 960 x 540)"),
                ));
            }
        }
        for (field, v) in [
            ("eye", &self.eye),
            ("target", &self.target),
            ("up", &self.up),
        ] {
            if let Some(v) = v
                && !finite3(v)
            {
                return Err(bad(field, v, "must be three finite numbers [x, y, z]"));
            }
        }
        if let Some(up) = &self.up
            && up.iter().all(|&c| c == 0.0)
        {
            return Err(bad("up", up, "must not be zero; e.g. [0, 0, 1] for z up"));
        }
        if !(self.fov_degrees.is_finite() && (1.0..=170.0).contains(&self.fov_degrees)) {
            return Err(bad(
                "fov_degrees",
                self.fov_degrees,
                "the vertical field of view must be between 1 and 170 degrees (e.g. 35)",
            ));
        }
        if let Some(r) = self.sphere_radius
            && !(r.is_finite() && r > 0.0)
        {
            return Err(bad(
                "sphere_radius",
                r,
                "must be a positive length in metres (default: cell_size / 4)",
            ));
        }
        if let Some([lo, hi]) = self.speed_range
            && !(lo.is_finite() && hi.is_finite() && lo >= 0.0 && hi > lo)
        {
            return Err(bad(
                "speed_range",
                [lo, hi],
                "must be [slow, fast] in m/s with 0 <= slow < fast (e.g. [0, 3])",
            ));
        }
        Ok(())
    }
}

/// Everything a render needs, resolved from the settings, the domain and gravity: plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The camera, including the image size.
    pub camera: Camera,
    /// Sphere radius, m.
    pub sphere_radius: f32,
    /// Speeds mapped to the colour map's ends, m/s.
    pub speed_range: [f32; 2],
    /// The liquid region `[lower, upper]`, m, drawn as lines; `None` hides box and floor.
    pub region: Option<[[f64; 3]; 2]>,
    /// The floor: `(axis, side)` of the region's face gravity points to (side 0 = lower face,
    /// 1 = upper face); `None` without gravity or with `show_domain` off.
    pub floor: Option<(usize, usize)>,
    /// Draw the legend bar.
    pub legend: bool,
    /// Boxes `[lower, upper]`, m, drawn as faint outlines (the scene's emitters and sinks).
    pub outlines: Vec<[[f64; 3]; 2]>,
}

/// The liquid region of a domain: the domain minus its one-cell solid wall layer, `[lower,
/// upper]`, m.
pub fn liquid_region(domain: &Domain) -> [[f64; 3]; 2] {
    domain.liquid_region()
}

/// The default speed range's upper end, m/s: `sqrt(2 |g| H)` with `H` the liquid region's
/// extent along gravity's main axis, or `source_speed` (the fastest source's speed) if larger,
/// or 1 if both are 0.
pub fn default_max_speed(domain: &Domain, gravity: [f64; 3], source_speed: f64) -> f64 {
    let [lo, hi] = liquid_region(domain);
    let g = gravity.iter().map(|c| c * c).sum::<f64>().sqrt();
    let fall = if g > 0.0 {
        let axis = (0..3)
            .max_by(|&a, &b| gravity[a].abs().total_cmp(&gravity[b].abs()))
            .unwrap_or(2);
        (2.0 * g * (hi[axis] - lo[axis]).max(0.0)).sqrt()
    } else {
        0.0
    };
    let m = fall.max(source_speed);
    if m > 0.0 && m.is_finite() { m } else { 1.0 }
}

/// What a [`View`] is resolved from: the settings and the few scene facts they default from.
/// Plain data; a scene converts into it (`From<&Scene>` in `scene`).
#[derive(Debug, Clone)]
pub struct ViewInput<'a> {
    /// The scene's `render` section.
    pub settings: &'a RenderSettings,
    /// The simulation box.
    pub domain: &'a Domain,
    /// Gravity, m/s^2.
    pub gravity: [f64; 3],
    /// The fastest source's initial speed, m/s (0 without any).
    pub source_speed: f64,
    /// Boxes to outline faintly (the bounding boxes of emitters and sinks).
    pub outlines: Vec<[[f64; 3]; 2]>,
}

impl View {
    /// Resolves settings against a domain, gravity (m/s^2) and the fastest source speed (m/s,
    /// which only feeds the default speed range).
    pub fn new(
        settings: &RenderSettings,
        domain: &Domain,
        gravity: [f64; 3],
        source_speed: f64,
    ) -> Result<View, SettingError> {
        settings.validate()?;
        let region = liquid_region(domain);
        let camera = Camera::from_settings(settings, region, gravity)?;
        let sphere_radius = settings
            .sphere_radius
            .unwrap_or(0.5 * domain.particle_spacing()) as f32;
        let speed_range = settings
            .speed_range
            .unwrap_or([0.0, default_max_speed(domain, gravity, source_speed)]);
        let g2: f64 = gravity.iter().map(|c| c * c).sum();
        let floor = (settings.show_domain && g2 > 0.0).then(|| {
            let axis = (0..3)
                .max_by(|&a, &b| gravity[a].abs().total_cmp(&gravity[b].abs()))
                .unwrap_or(2);
            (axis, usize::from(gravity[axis] > 0.0))
        });
        Ok(View {
            camera,
            sphere_radius,
            speed_range: [speed_range[0] as f32, speed_range[1] as f32],
            region: settings.show_domain.then_some(region),
            floor,
            legend: settings.legend,
            outlines: Vec::new(),
        })
    }

    /// [`View::new`] for a scene (anything that gives a [`ViewInput`]).
    pub fn from_scene<'a>(input: impl Into<ViewInput<'a>>) -> Result<View, SettingError> {
        let i = input.into();
        let mut view = View::new(i.settings, i.domain, i.gravity, i.source_speed)?;
        if i.settings.show_domain {
            view.outlines = i.outlines;
        }
        Ok(view)
    }
}

/// Renders particles with a resolved view. Parallel (rayon), same pixels for any thread count.
pub fn render(particles: &Particles, view: &View) -> Image {
    raster::render(particles, view)
}

/// Stamps `frame` and its `time` (s) into the top-left corner (`frame 12  t = 0.400 s`, on
/// a light plate), when the view shows the legend; previews of a run carry it.
pub fn stamp(img: &mut Image, view: &View, frame: u32, time: f64) {
    if !view.legend {
        return;
    }
    let scale = font::scale_for(img.height);
    let margin = (img.height / 30).max(4);
    let text = font::stamp_text(frame, time);
    let (w, h) = font::text_size(&text, scale);
    if w + 2 * margin <= img.width && h + 2 * margin <= img.height {
        font::draw_text(img, margin, margin, &text, scale);
    }
}

/// Renders particles as a scene's `render` section says (anything that gives a [`ViewInput`]).
pub fn render_scene<'a>(
    particles: &Particles,
    input: impl Into<ViewInput<'a>>,
) -> anyhow::Result<Image> {
    Ok(render(particles, &View::from_scene(input)?))
}
