//! Sphere previews' legend and stamp: the speed marker and numbers follow the scale, and every
//! run and `surge preview` frame carries its frame number and time.

use surge::render::{self, Image, View};
use surge::scene::Scene;

mod common;
use common::preview::{changed, decode_with_png_crate, particles, scene};

#[test]
fn the_legend_marks_the_frames_top_speed() {
    // No box or floor: in the bottom-right corner only the legend is dark.
    let sc = scene(r#"{"width": 320, "height": 200, "show_domain": false, "speed_range": [0, 4]}"#);
    let marker_x = |speed: f32| -> f64 {
        let img = render::render_scene(&particles(&[([0.0; 3], [0.0, 0.0, speed])]), &sc).unwrap();
        // Dark pixels just above the bar (bottom-right corner, above its top edge).
        let bar_top = (150..200u32)
            .find(|&y| img.pixel(300, y).iter().all(|&c| c < 80))
            .expect("legend bar frame");
        let xs: Vec<u32> = (240..320u32)
            .filter(|&x| (bar_top - 6..bar_top).any(|y| img.pixel(x, y).iter().all(|&c| c < 80)))
            .collect();
        assert!(!xs.is_empty(), "no marker at speed {speed}");
        xs.iter().sum::<u32>() as f64 / xs.len() as f64
    };
    let (slow, mid, fast, off_scale) = (marker_x(0.0), marker_x(2.0), marker_x(4.0), marker_x(9.0));
    assert!(slow < mid && mid < fast, "{slow} {mid} {fast}");
    assert_eq!(
        fast, off_scale,
        "speeds past the range pin the marker to the end"
    );
}

/// Pixels of the built-in font's ink colour in the rectangle `[x0, x1) x [y0, y1)`.
fn ink_in(img: &Image, x0: u32, x1: u32, y0: u32, y1: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for y in y0..y1.min(img.height) {
        for x in x0..x1.min(img.width) {
            if img.pixel(x, y) == render::font::INK {
                out.push((x, y));
            }
        }
    }
    out
}

#[test]
fn the_legend_carries_its_speeds_in_numbers_that_follow_the_scale() {
    // No box or floor; one still particle. The labels sit under the bar (bottom-right).
    let render_with = |max: f64| -> Image {
        let sc = scene(&format!(
            r#"{{"width": 480, "height": 270, "show_domain": false, "speed_range": [0, {max}]}}"#
        ));
        render::render_scene(&particles(&[([0.0; 3], [0.0; 3])]), &sc).unwrap()
    };
    let (a, b, c) = (render_with(2.0), render_with(5.0), render_with(2.0));
    // The bar's frame: the first dark row from the top in the bar's right column.
    let bar_top = (200..270u32)
        .find(|&y| a.pixel(470, y).iter().all(|&v| v < 80))
        .expect("legend bar");
    let labels = ink_in(&a, 300, 480, bar_top + 5, 270);
    assert!(
        labels.len() > 40,
        "no legend numbers under the bar: {} ink pixels",
        labels.len()
    );
    // The right label, drawn where draw_legend puts it: "2.0 m/s" at scale 1 on its plate.
    let (w, h) = render::font::text_size("2.0 m/s", render::font::scale_for(270));
    let mut expect = a.clone();
    let right_x = labels.iter().map(|p| p.0).max().unwrap() + 2 - w;
    let top_y = labels.iter().map(|p| p.1).min().unwrap() - 1;
    render::font::draw_text(&mut expect, right_x, top_y, "2.0 m/s", 1);
    assert_eq!(
        changed(&a, &expect, 0),
        vec![],
        "the right label is not `2.0 m/s` ({w} x {h} at {right_x}, {top_y})"
    );
    // Another scale, other numbers (the same pixels elsewhere but the bar's colours do not
    // change: the same map); the same scale, the same pixels.
    let moved = changed(&a, &b, 0);
    assert!(!moved.is_empty(), "the labels did not follow the scale");
    assert!(
        moved.iter().all(|&(x, y)| x >= 300 && y > bar_top),
        "only the labels under the bar change: {:?}",
        moved.iter().find(|&&(x, y)| x < 300 || y <= bar_top)
    );
    assert_eq!(a, c);
    // legend: false draws no numbers.
    let sc = scene(r#"{"width": 480, "height": 270, "show_domain": false, "legend": false}"#);
    let off = render::render_scene(&particles(&[([0.0; 3], [0.0; 3])]), &sc).unwrap();
    assert!(ink_in(&off, 0, 480, 0, 270).is_empty());
}

#[test]
fn run_and_preview_stamp_the_frame_and_time() {
    use surge::output::RunLayout;
    let dir = tempfile::tempdir().unwrap();
    let scene = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.json");
    let out = dir.path().join("o");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_surge"))
        .args(["run", scene.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(["--frames", "2", "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let layout = RunLayout::new(&out);
    let sc: Scene = serde_json::from_slice(&std::fs::read(layout.scene()).unwrap()).unwrap();
    let view = View::from_scene(&sc).unwrap();
    let fps = sc.time.fps;
    for f in 0..=2u32 {
        let run_png = std::fs::read(layout.preview(f)).unwrap();
        let img = decode_with_png_crate(&run_png);
        // Stamping the frame's own text again changes nothing: it is there already.
        let mut again = img.clone();
        render::stamp(&mut again, &view, f, f as f64 / fps);
        assert_eq!(changed(&img, &again, 0), vec![], "frame {f}: stamp missing");
        assert!(!ink_in(&img, 0, img.width / 2, 0, img.height / 4).is_empty());
        // Another frame's text would change it.
        let mut other = img.clone();
        render::stamp(&mut other, &view, f + 1, (f + 1) as f64 / fps);
        assert!(!changed(&img, &other, 0).is_empty(), "frame {f}");
    }
    // `surge preview` draws the same previews, stamp included.
    let before: Vec<_> = (0..=2)
        .map(|f| std::fs::read(layout.preview(f)).unwrap())
        .collect();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_surge"))
        .args(["preview", out.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in 0..=2u32 {
        assert_eq!(
            std::fs::read(layout.preview(f)).unwrap(),
            before[f as usize],
            "frame {f}"
        );
    }
}
