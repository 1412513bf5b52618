//! An 8-bit sRGB image: what the preview stage draws. Plain data (layer 0, imports nothing of
//! surge); its PNG encoding belongs to the output stage (`output::png`).

/// An 8-bit sRGB image, rows top to bottom, 3 bytes per pixel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// `width * height * 3` bytes, row-major from the top-left pixel, RGB.
    pub rgb: Vec<u8>,
}

impl Image {
    /// A black image.
    pub fn new(width: u32, height: u32) -> Self {
        Self {
            width,
            height,
            rgb: vec![0; width as usize * height as usize * 3],
        }
    }

    /// The pixel in column `x`, row `y` (row 0 at the top).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = 3 * (y as usize * self.width as usize + x as usize);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Sets one pixel.
    pub fn set_pixel(&mut self, x: u32, y: u32, c: [u8; 3]) {
        let i = 3 * (y as usize * self.width as usize + x as usize);
        self.rgb[i..i + 3].copy_from_slice(&c);
    }
}
