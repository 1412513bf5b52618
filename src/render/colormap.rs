//! The speed colour map and sRGB conversions.
//!
//! Speeds are coloured with **viridis** (van der Walt and Smith, matplotlib 2015, CC0): a
//! perceptually uniform, colour-blind-safe map from dark violet (slow) through blue and green
//! to yellow (fast) whose lightness rises monotonically, so it also reads in greyscale. The
//! table holds every 8th entry of matplotlib's 256-entry table (and the last), interpolated
//! linearly in sRGB; the error against the full table is below 1/255.
//!
//! Shading happens in linear light: [`srgb_to_linear`] before, [`LinearToSrgb`] (a 4096-entry
//! table) after.

/// Viridis at table indices 0, 8, 16, ..., 248 and 255 (of 256), sRGB in `[0, 1]`.
const VIRIDIS: [[f32; 3]; 33] = [
    [0.267004, 0.004874, 0.329415],
    [0.277018, 0.050344, 0.375715],
    [0.282327, 0.094955, 0.417331],
    [0.282884, 0.135920, 0.453427],
    [0.278826, 0.175490, 0.483397],
    [0.270595, 0.214069, 0.507052],
    [0.258965, 0.251537, 0.524736],
    [0.244972, 0.287675, 0.537260],
    [0.229739, 0.322361, 0.545706],
    [0.214298, 0.355619, 0.551184],
    [0.199430, 0.387607, 0.554642],
    [0.185556, 0.418570, 0.556753],
    [0.172719, 0.448791, 0.557885],
    [0.160665, 0.478540, 0.558115],
    [0.149039, 0.508051, 0.557250],
    [0.137770, 0.537492, 0.554906],
    [0.127568, 0.566949, 0.550556],
    [0.120565, 0.596422, 0.543611],
    [0.120638, 0.625828, 0.533488],
    [0.132268, 0.655014, 0.519661],
    [0.157851, 0.683765, 0.501686],
    [0.196571, 0.711827, 0.479221],
    [0.246070, 0.738910, 0.452024],
    [0.304148, 0.764704, 0.419943],
    [0.369214, 0.788888, 0.382914],
    [0.440137, 0.811138, 0.340967],
    [0.515992, 0.831158, 0.294279],
    [0.595839, 0.848717, 0.243329],
    [0.678489, 0.863742, 0.189503],
    [0.762373, 0.876424, 0.137064],
    [0.845561, 0.887322, 0.099702],
    [0.926106, 0.897330, 0.104071],
    [0.993248, 0.906157, 0.143936],
];

/// Viridis at `t` in `[0, 1]` (clamped; NaN counts as 1), sRGB in `[0, 1]`.
pub fn viridis(t: f32) -> [f32; 3] {
    let t = if t.is_nan() { 1.0 } else { t.clamp(0.0, 1.0) };
    let x = t * 255.0;
    let k = ((x / 8.0) as usize).min(31);
    let (lo, hi) = (8 * k, (8 * k + 8).min(255));
    let f = (x - lo as f32) / (hi - lo) as f32;
    let (a, b) = (VIRIDIS[k], VIRIDIS[k + 1]);
    std::array::from_fn(|c| a[c] + (b[c] - a[c]) * f)
}

/// sRGB component in `[0, 1]` to linear light (IEC 61966-2-1).
pub fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// Linear light in `[0, 1]` to sRGB.
pub fn linear_to_srgb(c: f32) -> f32 {
    if c <= 0.0031308 {
        12.92 * c
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

/// Table-driven linear-to-8-bit-sRGB conversion.
pub struct LinearToSrgb {
    table: Vec<u8>,
}

const LUT_SIZE: usize = 4096;

impl LinearToSrgb {
    pub fn new() -> Self {
        let table = (0..LUT_SIZE)
            .map(|i| {
                let l = i as f32 / (LUT_SIZE - 1) as f32;
                (linear_to_srgb(l) * 255.0 + 0.5) as u8
            })
            .collect();
        Self { table }
    }

    /// Linear value (clamped to `[0, 1]`) to an 8-bit sRGB code.
    #[inline]
    pub fn get(&self, l: f32) -> u8 {
        let i = (l.clamp(0.0, 1.0) * (LUT_SIZE - 1) as f32 + 0.5) as usize;
        self.table[i.min(LUT_SIZE - 1)]
    }
}

impl Default for LinearToSrgb {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_ends_and_monotone_lightness() {
        assert_eq!(viridis(0.0), VIRIDIS[0]);
        assert_eq!(viridis(1.0), VIRIDIS[32]);
        assert_eq!(viridis(-3.0), VIRIDIS[0]);
        // Relative luminance rises along the map.
        let lum = |c: [f32; 3]| {
            0.2126 * srgb_to_linear(c[0])
                + 0.7152 * srgb_to_linear(c[1])
                + 0.0722 * srgb_to_linear(c[2])
        };
        let mut prev = -1.0;
        for i in 0..=100 {
            let l = lum(viridis(i as f32 / 100.0));
            assert!(l > prev, "luminance falls at {i}");
            prev = l;
        }
    }

    #[test]
    fn srgb_round_trip() {
        let lut = LinearToSrgb::new();
        for code in [0u8, 1, 17, 128, 200, 255] {
            let l = srgb_to_linear(code as f32 / 255.0);
            assert_eq!(lut.get(l), code);
        }
    }
}
