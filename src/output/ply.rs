//! Surface meshes as binary PLY: `OUT/meshes/frame_NNNN.ply`.
//!
//! ```text
//! ply
//! format binary_little_endian 1.0
//! comment surge surface mesh
//! comment frame 12
//! comment time 0.4
//! comment units metres, scene axes (z up by default)
//! element vertex N
//! property float x          position, m
//! property float y
//! property float z
//! property float nx         unit normal, out of the liquid
//! property float ny
//! property float nz
//! property float vx         velocity, m/s (Blender: a vertex attribute, for motion blur)
//! property float vy
//! property float vz
//! element face F
//! property list uchar uint vertex_indices   3 indices, counter-clockwise seen from outside
//! end_header
//! ```
//!
//! then N vertex records of 9 little-endian f32 (36 bytes) and F face records of one `u8` (3)
//! and three little-endian `u32` (13 bytes). The time comment is the shortest decimal that
//! reads back as the exact f64.
//!
//! A frame with no liquid is a valid PLY with `element vertex 0` and `element face 0`.
//! Blender's own PLY importer rejects such a file; `scripts/blender_import.py` reads it as an
//! empty mesh.
//!
//! The writer is hand-rolled (a header and two tight loops, several times faster than a
//! generic property writer for million-face meshes); `tests/surface_ply.rs` reads every
//! variant back with `ply-rs-bw` and with Python's `plyfile`.

use crate::mesh::TriMesh;

/// Bytes per vertex record.
pub const VERTEX_BYTES: usize = 36;
/// Bytes per face record.
pub const FACE_BYTES: usize = 13;

/// The header text for a mesh of `vertices` and `faces`.
pub fn header(vertices: usize, faces: usize, frame: u32, time: f64) -> String {
    let mut h = String::with_capacity(512);
    h.push_str("ply\nformat binary_little_endian 1.0\ncomment surge surface mesh\n");
    h.push_str(&format!("comment frame {frame}\ncomment time {time:?}\n"));
    h.push_str("comment units metres, scene axes (z up by default)\n");
    h.push_str(&format!("element vertex {vertices}\n"));
    for p in ["x", "y", "z", "nx", "ny", "nz", "vx", "vy", "vz"] {
        h.push_str(&format!("property float {p}\n"));
    }
    h.push_str(&format!("element face {faces}\n"));
    h.push_str("property list uchar uint vertex_indices\nend_header\n");
    h
}

/// Encodes `mesh` as binary little-endian PLY with a frame/time comment.
pub fn encode(mesh: &TriMesh, frame: u32, time: f64) -> Vec<u8> {
    let nv = mesh.positions.len();
    let nf = mesh.triangles.len();
    let h = header(nv, nf, frame, time);
    let mut out = Vec::with_capacity(h.len() + nv * VERTEX_BYTES + nf * FACE_BYTES);
    out.extend_from_slice(h.as_bytes());
    for i in 0..nv {
        for v in mesh.positions[i]
            .iter()
            .chain(&mesh.normals[i])
            .chain(&mesh.velocities[i])
        {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    for t in &mesh.triangles {
        out.push(3);
        for v in t {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Vertex and face counts from a PLY header (any PLY; used by tests and tools).
pub fn header_counts(bytes: &[u8]) -> anyhow::Result<(usize, usize)> {
    let end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .ok_or_else(|| anyhow::anyhow!("not a PLY file: no end_header line"))?;
    let text = std::str::from_utf8(&bytes[..end])?;
    let count = |name: &str| -> anyhow::Result<usize> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("element {name} ")))
            .ok_or_else(|| anyhow::anyhow!("PLY header has no '{name}' element"))?;
        Ok(line[8 + name.len() + 1..].trim().parse()?)
    };
    Ok((count("vertex")?, count("face")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_counts() {
        let m = TriMesh {
            positions: vec![[0., 0., 0.], [1., 0., 0.], [0., 1., 0.]],
            normals: vec![[0., 0., 1.]; 3],
            velocities: vec![[1., 2., 3.]; 3],
            triangles: vec![[0, 1, 2]],
        };
        let b = encode(&m, 3, 0.1);
        let h = header(3, 1, 3, 0.1);
        assert_eq!(b.len(), h.len() + 3 * VERTEX_BYTES + FACE_BYTES);
        assert!(h.contains("comment time 0.1\n"));
        assert_eq!(header_counts(&b).unwrap(), (3, 1));
        assert_eq!(b[b.len() - FACE_BYTES], 3);
        let empty = encode(&TriMesh::default(), 0, 0.0);
        assert_eq!(header_counts(&empty).unwrap(), (0, 0));
    }
}
