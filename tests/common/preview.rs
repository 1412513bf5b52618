//! Helpers of the preview tests (`tests/preview.rs`, `tests/preview_legend.rs`).

use surge::render::Image;
use surge::scene::Scene;
use surge::sim::Particles;

/// A 1 m box domain, z up, with optional `render` JSON.
pub fn scene(render: &str) -> Scene {
    let json = format!(
        r#"{{
            "domain": {{"lower": [-0.5, -0.5, -0.5], "cell_size": 0.05, "resolution": [20, 20, 20]}},
            "sources": [{{"type": "box", "min": [-0.45, -0.45, -0.45], "max": [0, 0, 0]}}],
            "render": {render}
        }}"#
    );
    serde_json::from_str(&json).expect("test scene parses")
}

pub fn particles(points: &[([f32; 3], [f32; 3])]) -> Particles {
    let mut p = Particles::default();
    for &(x, v) in points {
        p.push(x, v);
    }
    p
}

pub fn diff(a: [u8; 3], b: [u8; 3]) -> u32 {
    (0..3).map(|c| a[c].abs_diff(b[c]) as u32).sum()
}

/// Pixels where two same-sized images differ by more than `threshold` (summed over channels).
pub fn changed(a: &Image, b: &Image, threshold: u32) -> Vec<(u32, u32)> {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let mut out = Vec::new();
    for y in 0..a.height {
        for x in 0..a.width {
            if diff(a.pixel(x, y), b.pixel(x, y)) > threshold {
                out.push((x, y));
            }
        }
    }
    out
}

/// Decodes a PNG with the `png` crate directly (not through surge).
pub fn decode_with_png_crate(bytes: &[u8]) -> Image {
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    Image {
        width: info.width,
        height: info.height,
        rgb: buf,
    }
}
