//! An 8-bit sRGB image and its PNG encoding (the `png` crate).

use anyhow::Context;

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

    /// The image as a PNG file (8-bit RGB, sRGB chunk, fast deflate).
    pub fn to_png(&self) -> anyhow::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.rgb.len() / 4 + 1024);
        let mut enc = png::Encoder::new(&mut out, self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        enc.set_compression(png::Compression::Fast);
        let mut w = enc.write_header().context("encoding the preview PNG")?;
        w.write_image_data(&self.rgb)
            .context("encoding the preview PNG")?;
        w.finish().context("encoding the preview PNG")?;
        Ok(out)
    }

    /// Decodes an 8-bit RGB PNG (as [`Image::to_png`] writes).
    pub fn from_png(bytes: &[u8]) -> anyhow::Result<Image> {
        let dec = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = dec.read_info().context("decoding PNG")?;
        let mut buf = vec![0; reader.output_buffer_size().context("PNG too large")?];
        let info = reader.next_frame(&mut buf).context("decoding PNG")?;
        anyhow::ensure!(
            info.color_type == png::ColorType::Rgb && info.bit_depth == png::BitDepth::Eight,
            "PNG is {:?} {:?}, expected 8-bit RGB",
            info.color_type,
            info.bit_depth
        );
        buf.truncate(info.buffer_size());
        Ok(Image {
            width: info.width,
            height: info.height,
            rgb: buf,
        })
    }
}
