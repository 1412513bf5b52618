//! Sphere previews: geometry, occlusion, backdrop, frame-to-frame change, PNG, determinism, CLI.

use surge::output::frame::ParticleFrame;
use surge::render::{self, Image, View};
use surge::sim::Particles;

mod common;
use common::preview::{changed, decode_with_png_crate, diff, particles, scene};

/// Eye on -y looking at the origin, z up, no box, no legend: camera space is (x, z, y + 5).
const FRONT_CAMERA: &str = r#"{"width": 400, "height": 300, "eye": [0, -5, 0], "target": [0, 0, 0],
    "up": [0, 0, 1], "fov_degrees": 30, "sphere_radius": 0.1, "show_domain": false,
    "legend": false, "speed_range": [0, 2]}"#;

#[test]
fn one_sphere_lands_where_the_camera_projects_it_with_the_expected_radius() {
    let sc = scene(FRONT_CAMERA);
    let empty = render::render_scene(&Particles::default(), &sc).unwrap();
    let (cx, cz, r) = (0.4f64, 0.25f64, 0.1f64);
    let img = render::render_scene(
        &particles(&[([cx as f32, 0.0, cz as f32], [0.0, 0.0, 1.0])]),
        &sc,
    )
    .unwrap();
    // Pinhole maths written out independently of the renderer: depth 5, focal length in pixels
    // f = (H/2) / tan(fov/2), image x = W/2 + f x/z, image y = H/2 - f z_world/z.
    let depth = 5.0f64;
    let f = 150.0 / (15f64.to_radians()).tan();
    let (ex, ey) = (200.0 + f * cx / depth, 150.0 - f * cz / depth);
    // Silhouette half-widths from the tangent lines through the eye (exact for a sphere).
    let half = |c: f64| {
        let s = (c * c + depth * depth - r * r).sqrt();
        let lo = (c * depth - r * s) / (depth * depth - r * r);
        let hi = (c * depth + r * s) / (depth * depth - r * r);
        0.5 * f * (hi - lo)
    };
    let (rx, ry) = (half(cx), half(cz));
    assert!(rx > 10.0 && ry > 10.0, "test sphere too small: {rx} px");

    let px = changed(&empty, &img, 40);
    assert!(!px.is_empty(), "the sphere is not in the image");
    let (xmin, xmax) = (
        px.iter().map(|p| p.0).min().unwrap() as f64,
        px.iter().map(|p| p.0).max().unwrap() as f64 + 1.0,
    );
    let (ymin, ymax) = (
        px.iter().map(|p| p.1).min().unwrap() as f64,
        px.iter().map(|p| p.1).max().unwrap() as f64 + 1.0,
    );
    let (mx, my) = (0.5 * (xmin + xmax), 0.5 * (ymin + ymax));
    assert!(
        (mx - ex).abs() < 0.75 && (my - ey).abs() < 0.75,
        "centre at ({mx}, {my}), camera projects to ({ex:.2}, {ey:.2})"
    );
    let (mrx, mry) = (0.5 * (xmax - xmin), 0.5 * (ymax - ymin));
    assert!(
        (mrx - rx).abs() < 1.0 && (mry - ry).abs() < 1.0,
        "radius ({mrx}, {mry}) px, expected ({rx:.2}, {ry:.2})"
    );
    // The silhouette is round: the changed area matches pi r^2 within a pixel ring.
    let area = px.len() as f64;
    let expect = std::f64::consts::PI * rx * ry;
    assert!(
        (area - expect).abs() < 2.0 * std::f64::consts::PI * rx,
        "area {area} px, expected {expect:.0}"
    );
    // The library's own projection agrees with the maths above.
    let view = View::from_scene(&sc).unwrap();
    let p = view.camera.project([cx, 0.0, cz]).unwrap();
    assert!((p[0] - ex).abs() < 1e-9 && (p[1] - ey).abs() < 1e-9);
}

#[test]
fn a_sphere_behind_another_is_hidden() {
    let sc = scene(FRONT_CAMERA);
    let front = ([0.0, -1.0, 0.0], [0.0, 0.0, 0.0]); // slow: violet
    let back = ([0.0, 1.0, 0.0], [0.0, 0.0, 2.0]); // fast: yellow, same radius, farther
    let only_front = render::render_scene(&particles(&[front]), &sc).unwrap();
    let both = render::render_scene(&particles(&[front, back]), &sc).unwrap();
    let both_reversed = render::render_scene(&particles(&[back, front]), &sc).unwrap();
    assert!(only_front == both, "the hidden sphere changed the image");
    assert!(only_front == both_reversed, "draw order changed the image");
    // ... and the back sphere alone is visible, in a different colour.
    let only_back = render::render_scene(&particles(&[back]), &sc).unwrap();
    let c = only_back.pixel(200, 150);
    assert!(c[0] > c[2], "fast sphere should be yellowish, got {c:?}");
    let c = only_front.pixel(200, 150);
    assert!(c[2] > c[1], "slow sphere should be violet, got {c:?}");
}

#[test]
fn an_empty_frame_renders_background_box_and_floor_only() {
    let sc = scene(r#"{"width": 320, "height": 180, "legend": false}"#);
    let mut bare = sc.clone();
    bare.render.show_domain = false;
    let img = render::render_scene(&Particles::default(), &sc).unwrap();
    let sky = render::render_scene(&Particles::default(), &bare).unwrap();
    // Without the domain, an empty frame is the sky: every row one colour, lighter downwards.
    for y in 0..sky.height {
        for x in 0..sky.width {
            assert_eq!(sky.pixel(x, y), sky.pixel(0, y));
        }
    }
    assert!(sky.pixel(0, 0)[0] < sky.pixel(0, sky.height - 1)[0]);
    // With it, only pixels inside the region's projected outline change.
    let view = View::from_scene(&sc).unwrap();
    let [lo, hi] = render::liquid_region(&sc.domain);
    let corners: Vec<[f64; 2]> = (0..8)
        .map(|k| {
            let c = [
                if k & 1 == 0 { lo[0] } else { hi[0] },
                if k & 2 == 0 { lo[1] } else { hi[1] },
                if k & 4 == 0 { lo[2] } else { hi[2] },
            ];
            view.camera.project(c).unwrap()
        })
        .collect();
    let (x0, x1) = corners
        .iter()
        .fold((f64::MAX, f64::MIN), |a, c| (a.0.min(c[0]), a.1.max(c[0])));
    let (y0, y1) = corners
        .iter()
        .fold((f64::MAX, f64::MIN), |a, c| (a.0.min(c[1]), a.1.max(c[1])));
    let px = changed(&sky, &img, 0);
    assert!(!px.is_empty());
    for &(x, y) in &px {
        let (x, y) = (x as f64 + 0.5, y as f64 + 0.5);
        assert!(
            x > x0 - 2.0 && x < x1 + 2.0 && y > y0 - 2.0 && y < y1 + 2.0,
            "pixel ({x}, {y}) changed outside the region's outline"
        );
    }
    // The default view fits the whole region in the frame, with a margin.
    assert!(x0 > 0.0 && y0 > 0.0 && x1 < 320.0 && y1 < 180.0);
    // The floor (z = lower + one cell) is shaded: its centre is darker than the sky there, and
    // grey, not liquid-coloured.
    let floor = view.camera.project([0.0, 0.0, lo[2]]).unwrap();
    let (fx, fy) = (floor[0] as u32, floor[1] as u32);
    let (f, s) = (img.pixel(fx, fy), sky.pixel(fx, fy));
    assert!(f[1] + 20 < s[1], "floor {f:?} vs sky {s:?}");
    assert!(f[0].abs_diff(f[2]) < 8, "floor is not grey: {f:?}");
    // A top edge is drawn: its midpoint pixel is darker than the sky.
    let mid = view.camera.project([0.0, lo[1], hi[2]]).unwrap();
    let e = img.pixel(mid[0] as u32, mid[1] as u32);
    let s = sky.pixel(mid[0] as u32, mid[1] as u32);
    assert!(diff(e, s) > 60, "edge {e:?} vs sky {s:?}");
    // Up is opposite to gravity: the top face projects above the floor.
    assert!(mid[1] < floor[1]);
}

/// A 10 x 10 x 10 block of resting particles with its lower corner at `at`.
fn block(at: [f32; 3]) -> Particles {
    let mut p = Particles::default();
    for i in 0..10 {
        for j in 0..10 {
            for k in 0..10 {
                let q = |a: usize, n: i32| at[a] + 0.025 * (n as f32 + 0.5);
                p.push([q(0, i), q(1, j), q(2, k)], [0.0, 0.0, 0.0]);
            }
        }
    }
    p
}

#[test]
fn previews_of_two_frames_differ_where_the_liquid_moved_and_decode_as_png() {
    let sc = scene(r#"{"width": 320, "height": 200}"#);
    let at_a = [-0.45f32, -0.45, -0.45];
    let at_b = [0.2f32, 0.2, -0.45];
    let pngs: Vec<Vec<u8>> = [at_a, at_b]
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let frame = ParticleFrame {
                frame: i as u32,
                time: i as f64 / 30.0,
                particles: block(at),
            };
            surge::run::frame_png_bytes(&frame, &sc).unwrap()
        })
        .collect();
    let imgs: Vec<Image> = pngs.iter().map(|b| decode_with_png_crate(b)).collect();
    for img in &imgs {
        assert_eq!((img.width, img.height), (320, 200));
    }
    let view = View::from_scene(&sc).unwrap();
    let centre = |at: [f32; 3]| {
        let p = view
            .camera
            .project(std::array::from_fn(|a| at[a] as f64 + 0.125))
            .unwrap();
        (p[0] as u32, p[1] as u32)
    };
    for (x, y) in [centre(at_a), centre(at_b)] {
        assert!(
            diff(imgs[0].pixel(x, y), imgs[1].pixel(x, y)) > 30,
            "no change at ({x}, {y}) where the liquid moved"
        );
    }
    // Far from both blocks (top-left corner, bottom-left corner) nothing changed.
    for (x, y) in [(2, 2), (2, 197), (317, 2)] {
        assert_eq!(imgs[0].pixel(x, y), imgs[1].pixel(x, y));
    }
    let moved = changed(&imgs[0], &imgs[1], 0).len();
    assert!(
        moved > 200 && moved < 320 * 200 / 2,
        "{moved} pixels changed"
    );
}

/// A pseudo-random splash: `n` particles from a fixed LCG.
fn cloud(n: usize) -> Particles {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 40) as f32) / (1u64 << 24) as f32
    };
    let mut p = Particles::default();
    for _ in 0..n {
        let x = [next() - 0.5, next() - 0.5, 0.9 * next() - 0.45];
        let v = [next() - 0.5, next() - 0.5, 4.0 * next() - 2.0];
        p.push(x.map(|c| 0.9 * c), v);
    }
    p
}

#[test]
fn same_bytes_with_one_and_two_threads() {
    let sc = scene(r#"{"width": 480, "height": 270}"#);
    let p = cloud(60_000);
    let frame = ParticleFrame {
        frame: 3,
        time: 0.1,
        particles: p,
    };
    let with = |n: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
            .install(|| surge::run::frame_png_bytes(&frame, &sc).unwrap())
    };
    let one = with(1);
    let two = with(2);
    assert!(one == two, "1 and 2 threads give different PNG bytes");
    assert!(one == with(3), "3 threads give different PNG bytes");
}

#[test]
fn bad_settings_name_the_field_and_the_fix() {
    let mut sc = scene("{}");
    sc.render.width = 0;
    let e = format!(
        "{:#}",
        render::render_scene(&Particles::default(), &sc).unwrap_err()
    );
    assert!(e.contains("render.width") && e.contains("960"), "{e}");
    let mut sc = scene("{}");
    sc.render.eye = Some([0.0, 0.0, 5.0]);
    sc.render.target = Some([0.0, 0.0, 0.0]);
    let e = format!(
        "{:#}",
        render::render_scene(&Particles::default(), &sc).unwrap_err()
    );
    assert!(e.contains("render.up") && e.contains("parallel"), "{e}");
    let mut sc = scene("{}");
    sc.render.speed_range = Some([2.0, 1.0]);
    let e = format!(
        "{:#}",
        render::render_scene(&Particles::default(), &sc).unwrap_err()
    );
    assert!(e.contains("render.speed_range"), "{e}");
    let e = serde_json::from_str::<surge::render::RenderSettings>(r#"{"widht": 5}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("widht"), "{e}");
}

#[test]
fn surge_preview_renders_a_runs_frames_into_previews() {
    use surge::cli::GlobalArgs;
    use surge::cli::preview::{PreviewArgs, run};
    use surge::output::RunLayout;
    let dir = tempfile::tempdir().unwrap();
    let layout = RunLayout::new(dir.path());
    let sc = scene(r#"{"width": 200, "height": 120}"#);
    std::fs::write(layout.scene(), serde_json::to_string_pretty(&sc).unwrap()).unwrap();
    for (i, at) in [
        [-0.45f32, -0.45, -0.45],
        [0.0, 0.0, -0.45],
        [0.2, 0.2, -0.45],
    ]
    .into_iter()
    .enumerate()
    {
        let frame = ParticleFrame {
            frame: i as u32,
            time: i as f64 / 30.0,
            particles: block(at),
        };
        surge::output::frame::write(&layout.particles(i as u32), &frame).unwrap();
    }
    let quiet = GlobalArgs {
        quiet: true,
        verbose: 0,
    };
    // Inclusive range 1..2, at a size from the command line.
    run(
        &quiet,
        PreviewArgs {
            out: dir.path().to_path_buf(),
            frames: Some("1..2".into()),
            width: Some(160),
            height: Some(90),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!layout.preview(0).exists());
    for f in [1, 2] {
        let img = decode_with_png_crate(&std::fs::read(layout.preview(f)).unwrap());
        assert_eq!((img.width, img.height), (160, 90));
    }
    // No range: every frame the run has, at the scene's size.
    run(
        &quiet,
        PreviewArgs {
            out: dir.path().to_path_buf(),
            ..Default::default()
        },
    )
    .unwrap();
    let img = decode_with_png_crate(&std::fs::read(layout.preview(0)).unwrap());
    assert_eq!((img.width, img.height), (200, 120));
    // A frame the run does not have: a clear error naming the file.
    let e = run(
        &quiet,
        PreviewArgs {
            out: dir.path().to_path_buf(),
            frames: Some("2..5".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("frame_0003.bin") && e.contains("--frames"),
        "{e}"
    );
    // An open end stops at the last particle frame present (as `surge mesh` reads it), not at
    // the scene's last frame: a run stopped early previews what it has.
    assert!(sc.time.frames > 2, "the scene runs past the frames written");
    std::fs::remove_file(layout.preview(2)).unwrap();
    run(
        &quiet,
        PreviewArgs {
            out: dir.path().to_path_buf(),
            frames: Some("2..".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(layout.preview(2).exists());
    // Not a run folder.
    let e = run(
        &quiet,
        PreviewArgs {
            out: dir.path().join("nowhere"),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("scene.json"));
}

#[test]
fn unusable_particles_are_skipped_not_drawn_or_panicking() {
    let sc = scene(FRONT_CAMERA);
    let empty = render::render_scene(&Particles::default(), &sc).unwrap();
    let bad = particles(&[
        ([f32::NAN, 0.0, 0.0], [0.0; 3]),
        ([f32::INFINITY, 0.0, 0.0], [0.0; 3]),
        ([0.0, -5.0, 0.0], [0.0; 3]),  // at the eye
        ([0.0, -9.0, 0.0], [0.0; 3]),  // behind the eye
        ([0.0, -4.95, 0.0], [0.0; 3]), // the eye is inside it
        ([50.0, 0.0, 0.0], [0.0; 3]),  // far outside the view
    ]);
    let img = render::render_scene(&bad, &sc).unwrap();
    assert!(img == empty, "unusable particles changed the image");
    // A NaN speed still draws the sphere (at the fast end of the map).
    let odd = particles(&[([0.0, 0.0, 0.0], [f32::NAN, 0.0, 0.0])]);
    let img = render::render_scene(&odd, &sc).unwrap();
    assert!(diff(img.pixel(200, 150), empty.pixel(200, 150)) > 40);
}

#[test]
fn preview_command_line_parses() {
    use clap::Parser;
    use surge::cli::{Cli, Command};
    let cli = Cli::try_parse_from([
        "surge",
        "preview",
        "out/dam",
        "--frames",
        "0..4",
        "--width",
        "640",
        "--height",
        "360",
        "--eye",
        "-1,-2.5,1.5",
        "--target=0,0,0.2",
        "--up",
        "0,0,1",
        "--fov",
        "40",
        "--radius",
        "0.003",
        "--speed-max",
        "3",
    ])
    .unwrap();
    let Command::Preview(a) = cli.command else {
        panic!("not the preview command")
    };
    assert_eq!(a.frames.as_deref(), Some("0..4"));
    assert_eq!((a.width, a.height), (Some(640), Some(360)));
    assert_eq!(a.eye, Some([-1.0, -2.5, 1.5]));
    assert_eq!(a.target, Some([0.0, 0.0, 0.2]));
    assert_eq!(
        (a.fov, a.radius, a.speed_max),
        (Some(40.0), Some(0.003), Some(3.0))
    );
    assert!(Cli::try_parse_from(["surge", "preview", "out", "--eye", "1,2"]).is_err());
}

/// `render.show_domain: false` leaves out the emitters' and sinks' outlines, moving ones too:
/// a keyframed sink's outline follows the frame's time only where outlines are drawn
/// (`surge::scene::outlines_at`, which `surge run` and `surge preview` use per frame). Before,
/// the per-frame path drew a moving sink's box even with `show_domain` off.
#[test]
fn moving_region_outlines_follow_show_domain() {
    let text = |show: bool| {
        format!(
            r#"{{
    "domain": {{ "lower": [0, 0, 0], "cell_size": 0.05, "resolution": [24, 8, 10] }},
    "sources": [ {{ "type": "box", "min": [0, 0, 0], "max": [0.3, 0.3, 0.2] }} ],
    "sinks": [ {{ "type": "sphere", "center": [0.6, 0.2, 0.1], "radius": 0.08,
                 "keyframes": [ {{ "time": 0, "translate": [0, 0, 0] }},
                                {{ "time": 1, "translate": [0.3, 0, 0] }} ] }} ],
    "render": {{ "show_domain": {show} }}
}}"#
        )
    };
    let load = |show: bool| {
        let p = std::path::Path::new("p.json");
        surge::scene::load_str(&text(show), p, std::path::Path::new("."))
            .unwrap()
            .scene
    };
    let on = load(true);
    let (a, b) = (
        surge::scene::outlines_at(&on, 0.0).expect("a moving sink is outlined"),
        surge::scene::outlines_at(&on, 0.5).expect("a moving sink is outlined"),
    );
    assert_eq!(a.len(), 1);
    assert!(
        (b[0][0][0] - a[0][0][0] - 0.15).abs() < 1e-9,
        "the outline follows the sink: {a:?} -> {b:?}"
    );
    let off = load(false);
    assert_eq!(surge::scene::outlines_at(&off, 0.5), None);
    assert!(View::from_scene(&off).unwrap().outlines.is_empty());
    assert_eq!(View::from_scene(&on).unwrap().outlines.len(), 1);
}
