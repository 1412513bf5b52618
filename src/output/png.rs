//! PNG files of preview images (the `png` crate): 8-bit RGB, an sRGB chunk, fast deflate.
//!
//! Layer 2 (output): imports the plain [`Image`] of layer 0.

use crate::image::Image;
use anyhow::Context;

impl Image {
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
