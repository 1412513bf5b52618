//! A tiny built-in bitmap font for the numbers on previews (the legend's speed scale and the
//! frame/time stamp): 5 x 7 pixel glyphs for the digits, `. - / = :`, space and the few
//! lower-case letters those labels use, drawn at an integer scale on an opaque plate so the text
//! reads on any background. No font file and no dependency: the glyphs are the classic 5 x 7
//! dot-matrix shapes (as in HD44780-style character LCDs), written out as bit rows.
//!
//! Drawing is idempotent (every pixel of the plate is set to a fixed colour), so drawing the
//! same text twice gives the same image; tests use that to check what a preview carries.

use crate::image::Image;

/// Glyph width and height, pixels at scale 1 (plus one column of spacing per glyph).
pub const GLYPH_W: u32 = 5;
pub const GLYPH_H: u32 = 7;
/// Text colour and the plate behind it (sRGB).
pub const INK: [u8; 3] = [32, 36, 44];
pub const PLATE: [u8; 3] = [236, 238, 241];

/// The 5 x 7 rows of `c` (bit 4 is the left column); `None` for a character the font lacks.
fn glyph(c: char) -> Option<[u8; 7]> {
    Some(match c {
        '0' => [0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e],
        '1' => [0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e],
        '2' => [0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f],
        '3' => [0x1e, 0x01, 0x01, 0x0e, 0x01, 0x01, 0x1e],
        '4' => [0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02],
        '5' => [0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e],
        '6' => [0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e],
        '7' => [0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e],
        '9' => [0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c],
        '.' => [0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c],
        '-' => [0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00],
        '/' => [0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10],
        '=' => [0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00],
        ':' => [0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00],
        ' ' => [0; 7],
        'a' => [0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f],
        'e' => [0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e],
        'f' => [0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08],
        'm' => [0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11],
        'r' => [0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10],
        's' => [0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e],
        't' => [0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06],
        'x' => [0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11],
        _ => return None,
    })
}

/// Whether the font draws every character of `text`.
pub fn covers(text: &str) -> bool {
    text.chars().all(|c| glyph(c).is_some())
}

/// Size `(width, height)` in pixels of `text` at `scale`, its plate (one scaled pixel of
/// padding around the glyphs) included.
pub fn text_size(text: &str, scale: u32) -> (u32, u32) {
    let n = text.chars().count() as u32;
    let w = if n == 0 { 0 } else { n * (GLYPH_W + 1) - 1 };
    ((w + 2) * scale, (GLYPH_H + 2) * scale)
}

/// The text scale for an image `height` pixels tall: 1 up to 404 rows, 2 at 540 (the default
/// preview), 4 at 1080.
pub fn scale_for(height: u32) -> u32 {
    ((height + 135) / 270).max(1)
}

/// Draws `text` with its plate's top-left corner at `(x, y)`; clipped to the image. Characters
/// the font lacks are drawn as blanks.
pub fn draw_text(img: &mut Image, x: u32, y: u32, text: &str, scale: u32) {
    let (w, h) = text_size(text, scale);
    for py in y..(y + h).min(img.height) {
        for px in x..(x + w).min(img.width) {
            img.set_pixel(px, py, PLATE);
        }
    }
    for (k, c) in text.chars().enumerate() {
        let rows = glyph(c).unwrap_or([0; 7]);
        let gx = x + scale * (1 + k as u32 * (GLYPH_W + 1));
        for (r, bits) in rows.iter().enumerate() {
            for col in 0..GLYPH_W {
                if bits >> (GLYPH_W - 1 - col) & 1 == 0 {
                    continue;
                }
                let (x0, y0) = (gx + col * scale, y + scale * (1 + r as u32));
                for py in y0..(y0 + scale).min(img.height) {
                    for px in x0..(x0 + scale).min(img.width) {
                        img.set_pixel(px, py, INK);
                    }
                }
            }
        }
    }
}

/// A speed for a legend label: two significant figures for small values, fewer digits as it
/// grows (`0`, `0.25`, `2.4`, `14`).
pub fn speed_label(v: f32) -> String {
    let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
    if v == 0.0 {
        "0".to_string()
    } else if v < 1.0 {
        format!("{v:.2}")
    } else if v < 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// The frame/time stamp text: `frame 12  t = 0.400 s`.
pub fn stamp_text(frame: u32, time: f64) -> String {
    format!("frame {frame}  t = {time:.3} s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_character_has_a_glyph_and_digits_differ() {
        assert!(covers(&stamp_text(1234567890, 0.25)));
        assert!(covers("0.25 m/s max"));
        let digits: Vec<_> = "0123456789".chars().map(|c| glyph(c).unwrap()).collect();
        for i in 0..10 {
            for j in i + 1..10 {
                assert_ne!(digits[i], digits[j], "digits {i} and {j} look the same");
            }
        }
    }

    #[test]
    fn text_is_drawn_where_asked_and_idempotent() {
        let mut img = Image::new(64, 24);
        draw_text(&mut img, 3, 4, "10", 2);
        let (w, h) = text_size("10", 2);
        assert_eq!((w, h), (26, 18));
        // Only the plate's rectangle changed.
        for y in 0..24 {
            for x in 0..64 {
                let inside = (3..3 + w).contains(&x) && (4..4 + h).contains(&y);
                let p = img.pixel(x, y);
                assert_eq!(inside, p != [0, 0, 0], "({x}, {y})");
            }
        }
        // The 1's stem: column 2 of the first glyph, rows 1..=6 of the glyph.
        assert_eq!(img.pixel(3 + 2 * (1 + 2), 4 + 2 * 3), INK);
        let before = img.clone();
        draw_text(&mut img, 3, 4, "10", 2);
        assert_eq!(img, before);
        draw_text(&mut img, 3, 4, "11", 2);
        assert_ne!(img, before, "another text, other pixels");
    }

    #[test]
    fn labels_format_speeds_and_time() {
        assert_eq!(speed_label(0.0), "0");
        assert_eq!(speed_label(0.254), "0.25");
        assert_eq!(speed_label(2.43), "2.4");
        assert_eq!(speed_label(14.2), "14");
        assert_eq!(stamp_text(7, 0.2333333), "frame 7  t = 0.233 s");
        assert_eq!(scale_for(540), 2);
        assert_eq!(scale_for(200), 1);
    }
}
