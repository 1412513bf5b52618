//! Particle frames: `OUT/particles/frame_NNNN.bin`.
//!
//! Little-endian binary, 32-byte header then six f32 arrays (struct of arrays):
//!
//! | offset | type     | field                                   |
//! |--------|----------|-----------------------------------------|
//! | 0      | [u8; 8]  | magic `SURGEPRT`                        |
//! | 8      | u32      | format version (1)                      |
//! | 12     | u32      | frame index                             |
//! | 16     | u64      | particle count N                        |
//! | 24     | f64      | simulated time, s                       |
//! | 32     | f32 x N  | x, then y, z, vx, vy, vz (N each)       |
//!
//! Particles are in creation order. Read it in Python with
//! `numpy.fromfile(f, '<f4', offset=32).reshape(6, -1)`.

use crate::particles::Particles;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"SURGEPRT";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 32;

/// One frame of particles: what later stages (mesh, preview, resume) read.
#[derive(Debug, Clone, PartialEq)]
pub struct ParticleFrame {
    pub frame: u32,
    /// Simulated time, s.
    pub time: f64,
    pub particles: Particles,
}

/// Encodes a frame.
pub fn encode(frame: &ParticleFrame) -> Vec<u8> {
    let p = &frame.particles;
    let n = p.len();
    let mut out = Vec::with_capacity(HEADER_LEN + 24 * n);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&frame.frame.to_le_bytes());
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out.extend_from_slice(&frame.time.to_le_bytes());
    for arr in p.pos.iter().chain(p.vel.iter()) {
        for v in arr {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Decodes a frame; `what` names the source in errors.
pub fn decode(bytes: &[u8], what: &str) -> anyhow::Result<ParticleFrame> {
    use anyhow::{bail, ensure};
    ensure!(
        bytes.len() >= HEADER_LEN && &bytes[0..8] == MAGIC,
        "{what}: not a surge particle frame (bad magic or shorter than its 32-byte header)"
    );
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let version = u32_at(8);
    if version != VERSION {
        bail!(
            "{what}: particle frame format version {version}, this surge reads version {VERSION}"
        );
    }
    let frame = u32_at(12);
    let n = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let time = f64::from_le_bytes(bytes[24..32].try_into().unwrap());
    let expected = n.checked_mul(24).and_then(|b| b.checked_add(HEADER_LEN));
    ensure!(
        expected == Some(bytes.len()),
        "{what}: header says {n} particles ({} bytes) but the file has {} bytes; it is truncated or corrupt: re-run the frame",
        expected.map_or("too many".to_string(), |e| e.to_string()),
        bytes.len()
    );
    let mut arrays: [Vec<f32>; 6] = std::array::from_fn(|_| Vec::with_capacity(n));
    for (k, arr) in arrays.iter_mut().enumerate() {
        let start = HEADER_LEN + 4 * n * k;
        arr.extend(
            bytes[start..start + 4 * n]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap())),
        );
    }
    let [x, y, z, vx, vy, vz] = arrays;
    Ok(ParticleFrame {
        frame,
        time,
        particles: Particles {
            pos: [x, y, z],
            vel: [vx, vy, vz],
        },
    })
}

/// Writes a frame atomically.
pub fn write(path: &Path, frame: &ParticleFrame) -> anyhow::Result<()> {
    use anyhow::Context;
    super::atomic_write(path, &encode(frame)).with_context(|| format!("writing {}", path.display()))
}

/// Reads a frame.
pub fn read(path: &Path) -> anyhow::Result<ParticleFrame> {
    use anyhow::Context;
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    decode(&bytes, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut p = Particles::default();
        p.push([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]);
        p.push([-1.0, 0.5, 1e-7], [0.0, -9.8, 3.25]);
        let f = ParticleFrame {
            frame: 7,
            time: 7.0 / 30.0,
            particles: p,
        };
        let bytes = encode(&f);
        assert_eq!(bytes.len(), HEADER_LEN + 48);
        assert_eq!(decode(&bytes, "t").unwrap(), f);
        let err = decode(&bytes[..bytes.len() - 1], "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("truncated"), "{err}");
        assert!(decode(b"nonsense", "t").is_err());
    }
}
