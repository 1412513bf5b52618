//! Unit tests of the tutorial text formats.
use super::*;

#[test]
fn g_format_matches_c() {
    // Expected strings are C's printf("%g") output (glibc), widened from f32 where noted.
    let cases: &[(f64, &str)] = &[
        (0.0, "0"),
        (-0.0, "-0"),
        (1.0, "1"),
        (-0.095f32 as f64, "-0.095"),
        (1.56125e-17f32 as f64, "1.56125e-17"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (123456.0, "123456"),
        (1234567.0, "1.23457e+06"),
        (999999.5, "1e+06"),
        (0.30000001192092896, "0.3"),
        (-9.80665, "-9.80665"),
        (1e100, "1e+100"),
        (2.5e-5, "2.5e-05"),
        (0.000099999, "9.9999e-05"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (f64::NAN, "nan"),
    ];
    for &(v, want) in cases {
        assert_eq!(format_g(v), want, "value {v:e}");
    }
}

unsafe extern "C" {
    fn snprintf(
        buf: *mut std::ffi::c_char,
        n: usize,
        fmt: *const std::ffi::c_char,
        ...
    ) -> std::ffi::c_int;
}

/// The C library's own `%g`.
fn c_g(v: f64) -> String {
    let mut buf = [0 as std::ffi::c_char; 64];
    // SAFETY: the buffer is 64 bytes, `%g` of a double needs at most 13; the format string
    // is NUL-terminated and takes exactly one double.
    let n = unsafe { snprintf(buf.as_mut_ptr(), buf.len(), c"%g".as_ptr(), v) };
    let bytes: Vec<u8> = buf[..n as usize].iter().map(|&c| c as u8).collect();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn g_format_matches_the_c_library_on_random_floats() {
    let mut state = 0x9e3779b97f4a7c15u64;
    let mut checked = 0;
    for i in 0..200_000u32 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // Alternate raw f32 bit patterns (every exponent) and values near round decimals.
        let v = if i % 2 == 0 {
            f32::from_bits(state as u32)
        } else {
            ((state >> 40) as f32 / 1e3).round() / 1e3 * if state & 1 == 0 { 1.0 } else { -1.0 }
        };
        if !v.is_finite() {
            continue;
        }
        assert_eq!(format_g(v as f64), c_g(v as f64), "bits {:#x}", v.to_bits());
        checked += 1;
    }
    assert!(checked > 150_000);
}

#[test]
fn name_patterns() {
    let p = NamePattern::parse("fluid.%03d.part").unwrap();
    assert_eq!(p.name(7), "fluid.007.part");
    assert_eq!(p.name(1234), "fluid.1234.part");
    assert_eq!(p.frame_of("fluid.012.part"), Some(12));
    assert_eq!(p.frame_of("fluid.12.part"), None);
    assert_eq!(NamePattern::parse("o%4d").unwrap().name(5), "o   5");
    assert_eq!(NamePattern::parse("o%-4d.").unwrap().name(5), "o5   .");
    assert_eq!(NamePattern::parse("%d%%").unwrap().name(5), "5%");
    assert_eq!(
        NamePattern::parse("output.%04d.txt").unwrap().name(3),
        "output.0003.txt"
    );
    assert!(NamePattern::parse("fluid.part").is_err());
    assert!(NamePattern::parse("%d_%d").is_err());
    assert!(NamePattern::parse("%s").is_err());
    assert!(NamePattern::parse("a/%d").is_err());
    assert!(NamePattern::parse("a%").is_err());
}

#[test]
fn encode_layout() {
    let mut p = Particles::default();
    p.push([-0.095, -0.03, 1.56125e-17], [0.0, 0.0, -1.5]);
    assert_eq!(encode(&p), "1\n-0.095 -0.03 1.56125e-17 0 0 -1.5\n");
}
