//! Obstacle outlines on a preview: the twelve edges of each given box (an obstacle's world
//! bounds at the frame's time, so moving obstacles move), projected with the view's camera and
//! drawn over the finished image as 2-pixel dark orange lines. No depth test: an outline shows
//! through the liquid, which is what a preview of where the solids are needs.
//!
//! Layer 2 (render): takes plain boxes, never the scene.

use super::View;
use crate::image::Image;

const COLOUR: [u8; 3] = [200, 90, 20];

/// Draws the edges of every `[lo, hi]` box onto `img`.
pub fn draw_boxes(img: &mut Image, view: &View, boxes: &[([f64; 3], [f64; 3])]) {
    let cam = &view.camera;
    let (w, h) = (img.width as i64, img.height as i64);
    for (lo, hi) in boxes {
        let corner = |c: usize| [0, 1, 2].map(|a| if c >> a & 1 == 1 { hi[a] } else { lo[a] });
        for c in 0..8usize {
            for a in 0..3 {
                if c >> a & 1 == 1 {
                    continue;
                }
                let (p, q) = (corner(c), corner(c | 1 << a));
                let (Some(s), Some(e)) = (cam.project(p), cam.project(q)) else {
                    continue;
                };
                let len = ((e[0] - s[0]).abs().max((e[1] - s[1]).abs())).min(4.0 * (w + h) as f64);
                let steps = len.ceil().max(1.0) as i64;
                for k in 0..=steps {
                    let f = k as f64 / steps as f64;
                    let x = (s[0] + f * (e[0] - s[0])).floor() as i64;
                    let y = (s[1] + f * (e[1] - s[1])).floor() as i64;
                    for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                        let (px, py) = (x + dx, y + dy);
                        if px >= 0 && py >= 0 && px < w && py < h {
                            let i = 3 * (py * w + px) as usize;
                            img.rgb[i..i + 3].copy_from_slice(&COLOUR);
                        }
                    }
                }
            }
        }
    }
}
