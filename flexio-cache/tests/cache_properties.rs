//! The cache returns exactly what a plain file would: random reads, writes
//! (inside, across and past the end), flushes and reopenings through a
//! cache of a few blocks, so that evictions of dirty blocks are constant,
//! against a `Vec<u8>` model; after the last drop the file on disk equals
//! the model byte for byte.

use flexio_cache::policy::PolicyName;
use flexio_cache::{BlockCache, CacheConfig, ReadMode};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Read { offset: u64, len: usize },
    Write { offset: u64, len: usize, seed: u8 },
    Flush,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..90_000, 0usize..20_000).prop_map(|(offset, len)| Op::Read { offset, len }),
        4 => (0u64..90_000, 1usize..12_000, any::<u8>())
            .prop_map(|(offset, len, seed)| Op::Write { offset, len, seed }),
        1 => Just(Op::Flush),
        1 => Just(Op::Reopen),
    ]
}

fn config(policy: PolicyName, blocks: u64, multi: bool) -> CacheConfig {
    CacheConfig::new(blocks * 4096)
        .policy(policy)
        .flush_interval(None)
        .readahead_blocks(3)
        .read_mode(if multi {
            ReadMode::MultiBlock { max_blocks: 4 }
        } else {
            ReadMode::SingleBlock
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn cache_behaves_like_a_plain_file(
        policy in prop::sample::select(PolicyName::ALL.to_vec()),
        blocks in 1u64..8,
        multi in any::<bool>(),
        initial in 0usize..40_000,
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let path = dir.path().join("data");
        let mut model: Vec<u8> = (0..initial).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &model).unwrap();
        let mut cache = BlockCache::open(&path, config(policy, blocks, multi)).unwrap();
        for op in ops {
            match op {
                Op::Read { offset, len } => {
                    let mut buf = vec![0xeeu8; len];
                    let n = cache.read_at(&mut buf, offset).unwrap();
                    let start = (offset as usize).min(model.len());
                    let expected = &model[start..(start + len).min(model.len())];
                    prop_assert_eq!(n, expected.len());
                    prop_assert!(&buf[..n] == expected, "read {} at {}", len, offset);
                }
                Op::Write { offset, len, seed } => {
                    let data: Vec<u8> = (0..len).map(|i| seed.wrapping_add(i as u8)).collect();
                    cache.write_at(&data, offset).unwrap();
                    let end = offset as usize + len;
                    if model.len() < end {
                        model.resize(end, 0);
                    }
                    model[offset as usize..end].copy_from_slice(&data);
                }
                Op::Flush => {
                    cache.flush().unwrap();
                    let stats = cache.stats();
                    prop_assert_eq!(stats.dirty_blocks, 0);
                    prop_assert!(std::fs::read(&path).unwrap() == model, "on disk after flush");
                }
                Op::Reopen => {
                    drop(cache);
                    prop_assert!(std::fs::read(&path).unwrap() == model, "on disk after drop");
                    cache = BlockCache::open(&path, config(policy, blocks, multi)).unwrap();
                }
            }
            prop_assert_eq!(cache.len(), model.len() as u64);
        }
        drop(cache);
        prop_assert!(std::fs::read(&path).unwrap() == model, "on disk at the end");
    }
}
