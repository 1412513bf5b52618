//! Particle frames: `OUT/particles/frame_NNNN.bin`.
//!
//! Little-endian binary, version 2: a 40-byte header then six f32 arrays (struct of arrays):
//!
//! | offset | type     | field                                                  |
//! |--------|----------|--------------------------------------------------------|
//! | 0      | [u8; 8]  | magic `SURGEPRT`                                       |
//! | 8      | u32      | format version (2)                                     |
//! | 12     | u32      | frame index                                            |
//! | 16     | u64      | particle count N                                       |
//! | 24     | f64      | simulated time, s                                      |
//! | 32     | u32      | CRC-32 (IEEE) of bytes 0..32 and 36.. (all but itself) |
//! | 36     | u32      | reserved, 0 (and checked: it is in the CRC)            |
//! | 40     | f32 x N  | x, then y, z, vx, vy, vz (N each)                      |
//!
//! Version 1 (written before the checksum) had the same first 32 bytes and the arrays at 32;
//! it is still read, without a checksum to verify. Reading checks the checksum and that every
//! value is finite, so a flipped bit or a NaN is an error naming the frame, never a silently
//! wrong mesh. Particles are in creation order. Read it in Python with
//! `numpy.fromfile(f, '<f4', offset=40).reshape(6, -1)`.

use crate::particles::Particles;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"SURGEPRT";
pub const VERSION: u32 = 2;
pub const HEADER_LEN: usize = 40;
/// The header length of version 1 (no checksum).
pub const HEADER_LEN_V1: usize = 32;

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
    out.extend_from_slice(&[0u8; 8]);
    for arr in p.pos.iter().chain(p.vel.iter()) {
        for v in arr {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    let crc = checksum(&out);
    out[32..36].copy_from_slice(&crc.to_le_bytes());
    out
}

/// CRC-32 of a version-2 frame's bytes except the checksum field itself.
fn checksum(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..32]);
    h.update(&bytes[36..]);
    h.finalize()
}

/// Decodes a frame (version 2, or version 1 without a checksum); `what` names the source in
/// errors.
pub fn decode(bytes: &[u8], what: &str) -> anyhow::Result<ParticleFrame> {
    use anyhow::{bail, ensure};
    ensure!(
        bytes.len() >= HEADER_LEN_V1 && &bytes[0..8] == MAGIC,
        "{what}: not a surge particle frame (bad magic or shorter than its header); it is corrupt: re-create it (`surge verify` says how)"
    );
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let version = u32_at(8);
    let header = match version {
        1 => HEADER_LEN_V1,
        2 => HEADER_LEN,
        _ => bail!(
            "{what}: particle frame format version {version}, this surge reads versions 1 and {VERSION}"
        ),
    };
    let frame = u32_at(12);
    let n = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let time = f64::from_le_bytes(bytes[24..32].try_into().unwrap());
    let expected = n.checked_mul(24).and_then(|b| b.checked_add(header));
    ensure!(
        expected == Some(bytes.len()),
        "{what}: header says {n} particles ({} bytes) but the file has {} bytes; it is truncated or corrupt: re-create it (`surge verify` says how)",
        expected.map_or("too many".to_string(), |e| e.to_string()),
        bytes.len()
    );
    // The checksum beside the six arrays' decoding and finiteness checks (in parallel; the
    // errors are reported in the serial order: checksum first, then the first array's).
    let (actual, decoded) = rayon::join(
        || (version == 2).then(|| checksum(bytes)),
        || {
            use rayon::prelude::*;
            let mut arrays: [Vec<f32>; 6] = Default::default();
            let mut bad = [None; 6];
            arrays
                .par_iter_mut()
                .zip(bad.par_iter_mut())
                .enumerate()
                .for_each(|(k, (arr, bad))| {
                    let start = header + 4 * n * k;
                    *arr = bytes[start..start + 4 * n]
                        .chunks_exact(4)
                        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                        .collect();
                    *bad = arr.iter().position(|v| !v.is_finite());
                });
            (arrays, bad)
        },
    );
    if let Some(actual) = actual {
        let stored = u32_at(32);
        ensure!(
            stored == actual,
            "{what}: checksum mismatch (stored {stored:08x}, computed {actual:08x}): frame {frame} is corrupt (a flipped bit on disk or in transfer); re-create it (`surge verify` says how)"
        );
    }
    let (arrays, bad) = decoded;
    for (k, arr) in arrays.iter().enumerate() {
        if let Some(i) = bad[k] {
            bail!(
                "{what}: particle {i} has a non-finite {} ({}): frame {frame} is corrupt; re-create it (`surge verify` says how)",
                ["x", "y", "z", "vx", "vy", "vz"][k],
                arr[i]
            );
        }
    }
    ensure!(
        time.is_finite(),
        "{what}: the time of frame {frame} is not finite: the frame is corrupt; re-create it (`surge verify` says how)"
    );
    let [x, y, z, vx, vy, vz] = arrays;
    Ok(ParticleFrame {
        frame,
        time,
        particles: Particles {
            pos: [x, y, z],
            vel: [vx, vy, vz],
            affine: Default::default(),
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
    let bytes = read_file(path).with_context(|| format!("reading {}", path.display()))?;
    decode(&bytes, &path.display().to_string())
}

/// The bytes of a file; on Unix in 4 MiB pieces read in parallel (a frame of a million
/// particles is 25 MB: the copy out of the page cache is a serial step of the surface stage
/// otherwise).
fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    #[cfg(unix)]
    {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        const PIECE: usize = 4 << 20;
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len() as usize;
        let mut bytes = vec![0u8; len];
        bytes
            .par_chunks_mut(PIECE)
            .enumerate()
            .try_for_each(|(k, piece)| file.read_exact_at(piece, (k * PIECE) as u64))?;
        // The file may have grown since its length was read: read the rest (rare).
        let mut rest = Vec::new();
        use std::io::{Read, Seek};
        let mut f = &file;
        f.seek(std::io::SeekFrom::Start(len as u64))?;
        f.read_to_end(&mut rest)?;
        bytes.extend_from_slice(&rest);
        Ok(bytes)
    }
    #[cfg(not(unix))]
    std::fs::read(path)
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
        assert_eq!(&bytes[36..40], &[0; 4]);
        assert_eq!(decode(&bytes, "t").unwrap(), f);
        let err = decode(&bytes[..bytes.len() - 1], "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("truncated"), "{err}");
        assert!(decode(b"nonsense", "t").is_err());
        // Every single flipped bit is caught (by the checksum, or the magic/version/size).
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&b, "t").is_err(), "bit {bit} flipped unnoticed");
        }
        // Version 1 (no checksum) still reads.
        let mut v1 = bytes[..32].to_vec();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&bytes[HEADER_LEN..]);
        assert_eq!(decode(&v1, "t").unwrap(), f);
        // A NaN in a version-1 frame is caught by the finiteness check.
        v1[32..36].copy_from_slice(&f32::NAN.to_le_bytes());
        let err = decode(&v1, "t").unwrap_err().to_string();
        assert!(
            err.contains("non-finite x") && err.contains("frame 7"),
            "{err}"
        );
    }
}
