//! [`WallFriction`]: the tangential friction of each of the domain's six wall faces, the
//! scene's `domain.friction` (issue 19: "a per-wall `slip` / `no_slip` / friction setting").
//!
//! A river bed that holds the water back while the open sides of the same box must not, or a
//! quasi-2D flume whose floor is rough and whose glass side walls are smooth, need the faces
//! to differ. `domain.friction` is one of:
//!
//! - a number from 0 (free slip, the default) to 1 (no slip), for every wall face;
//! - `"slip"` (0) or `"no_slip"` (1), for every wall face;
//! - an object of faces, `{"z_min": "no_slip", "x_max": 0.3}`: each of `x_min`, `x_max`,
//!   `y_min`, `y_max`, `z_min`, `z_max` takes a number or a word, a face left out is free slip.
//!
//! What the friction does is `sim::friction`'s; an open face (`domain.boundaries`) is not a
//! wall and has none. A uniform friction is written back as the plain number it was (0 is left
//! out of the resolved scene by `Domain`), so scenes from before per-face friction keep their
//! physics hash.
//!
//! Layer 1: imports nothing of surge.

use serde::de::{self, MapAccess, Unexpected, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The faces' JSON names, in [`WallFriction::face`] order (`2 * axis + upper`).
pub const FACES: [&str; 6] = ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"];

/// Tangential friction per domain face, each in [0, 1] once checked: 0 free slip, 1 no slip.
/// Index `2 * axis + upper` (see [`FACES`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WallFriction(pub [f64; 6]);

impl WallFriction {
    /// The same friction on every face.
    pub const fn uniform(mu: f64) -> Self {
        Self([mu; 6])
    }

    /// The friction of the face of `axis` (0 x, 1 y, 2 z) on the `upper` side or the lower.
    pub fn face(&self, axis: usize, upper: bool) -> f64 {
        self.0[2 * axis + upper as usize]
    }

    /// True when every face is free slip (the default).
    pub fn is_free_slip(&self) -> bool {
        self.0.iter().all(|&m| m == 0.0)
    }

    /// The one friction of every face, if they all have the same.
    pub fn as_uniform(&self) -> Option<f64> {
        self.0.iter().all(|&m| m == self.0[0]).then_some(self.0[0])
    }

    /// The first face outside [0, 1] (or not finite): its JSON path below `domain` and value.
    pub fn out_of_range(&self) -> Option<(String, f64)> {
        let bad = |m: f64| !(0.0..=1.0).contains(&m);
        if let Some(m) = self.as_uniform() {
            return bad(m).then(|| ("domain.friction".to_string(), m));
        }
        (0..6)
            .find(|&f| bad(self.0[f]))
            .map(|f| (format!("domain.friction.{}", FACES[f]), self.0[f]))
    }

    /// The faces' frictions as f32 for the stepper, in [`FACES`] order.
    pub fn to_f32(&self) -> [f32; 6] {
        self.0.map(|m| m as f32)
    }
}

impl Serialize for WallFriction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if let Some(m) = self.as_uniform() {
            return s.serialize_f64(m);
        }
        let mut map = s.serialize_map(Some(6))?;
        for (name, m) in FACES.iter().zip(self.0) {
            map.serialize_entry(name, &m)?;
        }
        map.end()
    }
}

const EXPECTING: &str = "a friction from 0 (free slip) to 1 (no slip), \"slip\", \"no_slip\", \
                         or an object of faces (x_min, x_max, y_min, y_max, z_min, z_max)";

/// One face's value: a number or a word.
struct FaceValue(f64);

struct FaceVisitor;

impl Visitor<'_> for FaceVisitor {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a friction from 0 (free slip) to 1 (no slip), \"slip\" or \"no_slip\"")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        match v {
            "slip" => Ok(0.0),
            "no_slip" => Ok(1.0),
            _ => Err(E::invalid_value(Unexpected::Str(v), &self)),
        }
    }
}

impl<'de> Deserialize<'de> for FaceValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FaceVisitor).map(FaceValue)
    }
}

/// Reads one friction, a number or `"slip"` / `"no_slip"` (an obstacle's `friction`:
/// `#[serde(deserialize_with = ...)]`); the range is checked where the scene is.
pub fn one<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(FaceVisitor)
}

struct FrictionVisitor;

impl<'de> Visitor<'de> for FrictionVisitor {
    type Value = WallFriction;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(EXPECTING)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<WallFriction, E> {
        Ok(WallFriction::uniform(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<WallFriction, E> {
        Ok(WallFriction::uniform(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<WallFriction, E> {
        Ok(WallFriction::uniform(v as f64))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<WallFriction, E> {
        FaceVisitor
            .visit_str(v)
            .map(WallFriction::uniform)
            .map_err(|_: E| E::invalid_value(Unexpected::Str(v), &self))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WallFriction, A::Error> {
        let mut faces = [None; 6];
        while let Some(key) = map.next_key::<String>()? {
            let Some(f) = FACES.iter().position(|&n| n == key) else {
                return Err(de::Error::unknown_field(&key, &FACES));
            };
            if faces[f].is_some() {
                return Err(de::Error::duplicate_field(FACES[f]));
            }
            faces[f] = Some(map.next_value::<FaceValue>()?.0);
        }
        Ok(WallFriction(faces.map(|m| m.unwrap_or(0.0))))
    }
}

impl<'de> Deserialize<'de> for WallFriction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FrictionVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<WallFriction, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn numbers_words_and_faces() {
        assert_eq!(read("0.25"), Ok(WallFriction::uniform(0.25)));
        assert_eq!(read("1"), Ok(WallFriction::uniform(1.0)));
        assert_eq!(read("\"no_slip\""), Ok(WallFriction::uniform(1.0)));
        assert_eq!(read("\"slip\""), Ok(WallFriction::default()));
        let w = read(r#"{"z_min": "no_slip", "x_max": 0.3}"#).unwrap();
        assert_eq!(w.0, [0.0, 0.3, 0.0, 0.0, 1.0, 0.0]);
        assert_eq!(w.face(2, false), 1.0);
        assert_eq!(w.face(0, true), 0.3);
        assert!(!w.is_free_slip() && w.as_uniform().is_none());
        assert!(read("{}").unwrap().is_free_slip());
    }

    #[test]
    fn bad_values_name_what_is_expected() {
        let e = read("\"sticky\"").unwrap_err();
        assert!(e.contains("invalid value") && e.contains("no_slip"), "{e}");
        let e = read(r#"{"floor": 1}"#).unwrap_err();
        assert!(
            e.contains("unknown field `floor`") && e.contains("z_min"),
            "{e}"
        );
        let e = read(r#"{"z_min": "rough"}"#).unwrap_err();
        assert!(e.contains("invalid value") && e.contains("slip"), "{e}");
        let e = read(r#"{"z_min": 1, "z_min": 0}"#).unwrap_err();
        assert!(e.contains("duplicate field `z_min`"), "{e}");
        let e = read("[1, 0]").unwrap_err();
        assert!(e.contains("invalid type") && e.contains("x_min"), "{e}");
    }

    #[test]
    fn one_friction_takes_a_number_or_a_word() {
        #[derive(serde::Deserialize)]
        struct O {
            #[serde(deserialize_with = "one")]
            f: f64,
        }
        let f = |j: &str| {
            serde_json::from_str::<O>(j)
                .map(|o| o.f)
                .map_err(|e| e.to_string())
        };
        assert_eq!(f(r#"{"f": 0.5}"#), Ok(0.5));
        assert_eq!(f(r#"{"f": 1}"#), Ok(1.0));
        assert_eq!(f(r#"{"f": "no_slip"}"#), Ok(1.0));
        assert_eq!(f(r#"{"f": "slip"}"#), Ok(0.0));
        let e = f(r#"{"f": "grippy"}"#).unwrap_err();
        assert!(e.contains("invalid value") && e.contains("no_slip"), "{e}");
    }

    #[test]
    fn range_check_names_the_face() {
        assert_eq!(WallFriction::uniform(0.5).out_of_range(), None);
        assert_eq!(
            WallFriction::uniform(1.5).out_of_range(),
            Some(("domain.friction".to_string(), 1.5))
        );
        let w = read(r#"{"y_max": -0.5, "z_min": 1}"#).unwrap();
        assert_eq!(
            w.out_of_range(),
            Some(("domain.friction.y_max".to_string(), -0.5))
        );
    }

    /// A uniform friction writes back as the number it was (the physics hash of older scenes);
    /// per-face ones as all six faces, which read back the same.
    #[test]
    fn writes_back_what_it_reads() {
        assert_eq!(
            serde_json::to_string(&WallFriction::uniform(0.5)).unwrap(),
            "0.5"
        );
        let w = read(r#"{"z_min": 1}"#).unwrap();
        let s = serde_json::to_string(&w).unwrap();
        assert_eq!(
            s,
            r#"{"x_min":0.0,"x_max":0.0,"y_min":0.0,"y_max":0.0,"z_min":1.0,"z_max":0.0}"#
        );
        assert_eq!(read(&s), Ok(w));
    }
}
