//! `java.util.Random`, only as far as session passwords need it: every ZooKeeper server derives a
//! session's password as `new Random(sessionId ^ 0xB3415C00).nextBytes(byte[16])`, so a client
//! can move its session between servers (and between ZooKeeper and meerkat) with one password.

const MULTIPLIER: i64 = 0x5_DEEC_E66D;
const MASK: i64 = (1 << 48) - 1;

/// The password ZooKeeper gives the session `session_id`.
pub fn session_password(session_id: i64) -> [u8; 16] {
    const SUPER_SECRET: i64 = 0xB341_5C00;
    let mut seed = ((session_id ^ SUPER_SECRET) ^ MULTIPLIER) & MASK;
    let mut next_i32 = || {
        seed = (seed.wrapping_mul(MULTIPLIER).wrapping_add(0xB)) & MASK;
        (seed >> 16) as i32
    };
    let mut out = [0u8; 16];
    for chunk in out.chunks_mut(4) {
        let mut rnd = next_i32();
        for byte in chunk {
            *byte = rnd as u8;
            rnd >>= 8;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `new java.util.Random(42).nextInt()` is -1170105035 in every JVM.
    #[test]
    fn matches_java_sequence() {
        let mut seed = (42i64 ^ MULTIPLIER) & MASK;
        seed = (seed.wrapping_mul(MULTIPLIER).wrapping_add(0xB)) & MASK;
        assert_eq!((seed >> 16) as i32, -1170105035);
    }

    #[test]
    fn passwords_are_deterministic_and_distinct() {
        assert_eq!(session_password(7), session_password(7));
        assert_ne!(session_password(7), session_password(8));
    }
}
