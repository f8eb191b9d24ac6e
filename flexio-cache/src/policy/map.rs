//! The key → node index every policy keeps.
//!
//! Block numbers are integers the caller does not choose adversarially
//! within one file, so SipHash's protection against flooding buys nothing
//! and costs most of a hit's time; a multiply-xorshift mix (the finaliser of
//! SplitMix64) spreads sequential block numbers over the table instead.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` from block key to a `u32` node, hashed with [`BlockHasher`].
pub(crate) type KeyMap = HashMap<u64, u32, BuildHasherDefault<BlockHasher>>;

/// Makes a [`KeyMap`] with room for `capacity` keys.
pub(crate) fn key_map(capacity: usize) -> KeyMap {
    KeyMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default())
}

/// SplitMix64's finaliser over one `u64`.
#[derive(Default)]
pub(crate) struct BlockHasher(u64);

/// SplitMix64's finaliser: spreads block numbers over a table.
#[inline]
pub(crate) fn mix(key: u64) -> u64 {
    let mut z = key;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        mix(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}
