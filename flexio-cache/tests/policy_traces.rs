//! Every policy on small hand-made traces whose hit/miss sequence was worked
//! out on paper (the working is in the comments).

use flexio_cache::policy::{Policy, PolicyName};

/// Replays `trace` and returns `H`/`M` per access.
fn replay(policy: &mut dyn Policy, trace: &[u64]) -> String {
    trace
        .iter()
        .map(|&key| {
            if policy.get(key).is_some() {
                'H'
            } else {
                policy.insert(key);
                'M'
            }
        })
        .collect()
}

/// A hot pair read twice, a scan of five, the hot pair again, in 4 frames.
const HOT_SCAN_HOT: [u64; 11] = [1, 2, 1, 2, 10, 11, 12, 13, 14, 1, 2];

#[test]
fn policy_lru_hot_set_is_flushed_by_a_scan() {
    // 12, 13, 14 evict 1, 2, 10 in that order: the hot pair is gone.
    let mut lru = PolicyName::Lru.build(4);
    assert_eq!(replay(lru.as_mut(), &HOT_SCAN_HOT), "MMHHMMMMMMM");
}

#[test]
fn policy_clock_hot_set_is_flushed_by_a_long_scan() {
    // 12 clears the bits of 1 and 2 and evicts 10; 13 evicts 11; 14 finds
    // 1 with its bit clear now and evicts it; then 1 evicts 2.
    let mut clock = PolicyName::Clock.build(4);
    assert_eq!(replay(clock.as_mut(), &HOT_SCAN_HOT), "MMHHMMMMMMM");
}

#[test]
fn policy_sieve_keeps_the_hot_set_through_a_scan() {
    // The hand clears 1 and 2 once, then stops at the scan's blocks, which
    // sit between the hand and the head: 10, 11, 12 leave.
    let mut sieve = PolicyName::Sieve.build(4);
    assert_eq!(replay(sieve.as_mut(), &HOT_SCAN_HOT), "MMHHMMMMMHH");
}

#[test]
fn policy_s3fifo_keeps_a_hot_set_read_thrice_through_a_scan() {
    // Read twice only, 1 and 2 (count 1) leave S for the ghost like the
    // scan, and come back from the ghost into M after the scan.
    let mut s3 = PolicyName::S3Fifo.build(4);
    assert_eq!(replay(s3.as_mut(), &HOT_SCAN_HOT), "MMHHMMMMMMM");
    // Read three times (count 2), 12 moves them to M; the scan's blocks
    // go from S to the ghost.
    let mut s3 = PolicyName::S3Fifo.build(4);
    let trace = [1, 2, 1, 2, 1, 2, 10, 11, 12, 13, 14, 1, 2];
    assert_eq!(replay(s3.as_mut(), &trace), "MMHHHHMMMMMHH");
}

#[test]
fn policy_arc_keeps_the_hot_set_through_a_scan() {
    // 1 and 2 are in T2; with p = 0 REPLACE takes T1's LRU each time.
    let mut arc = PolicyName::Arc.build(4);
    assert_eq!(replay(arc.as_mut(), &HOT_SCAN_HOT), "MMHHMMMMMHH");
}

/// Belady's example string in 3 frames.
const BELADY: [u64; 12] = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];

#[test]
fn policy_lru_and_clock_on_beladys_string() {
    for name in [PolicyName::Lru, PolicyName::Clock] {
        let mut policy = name.build(3);
        assert_eq!(replay(policy.as_mut(), &BELADY), "MMMMMMMHHMMM", "{name}");
    }
}

#[test]
fn policy_sieve_and_s3fifo_on_beladys_string() {
    // SIEVE: 4, 1, 2 each evict the tail (no bit set); 5 evicts 4; 1, 2
    // hit and set their bits; 3 clears 1's and 2's bits and evicts 5; 4
    // evicts 1 (bit clear now), 5 evicts 2.
    let mut sieve = PolicyName::Sieve.build(3);
    assert_eq!(replay(sieve.as_mut(), &BELADY), "MMMMMMMHHMMM");
    // S3-FIFO with S = 1 frame: nothing is read twice while in S before
    // the 5, so 4, 1, 2, 5 pass through S to the ghost. 1 and 2 come back
    // from the ghost into M, 3, 4 and 5 rotate through S.
    let mut s3 = PolicyName::S3Fifo.build(3);
    assert_eq!(replay(s3.as_mut(), &BELADY), "MMMMMMMHHMMM");
}

#[test]
fn policy_arc_ghost_hits_move_the_target() {
    // In 2 frames: 1 1 2 3 puts 1 in T2, 2 in B1 (p = 0). 2 hits B1: p = 1,
    // REPLACE takes T2's LRU (|T1| = 1 is not above p): 1 goes to B2. 1
    // hits B2: p = 0, REPLACE takes T1's 3 to B1. 3 hits B1: p = 1, T1 is
    // empty, so T2's LRU, 2, goes. 1 is still resident.
    let mut arc = PolicyName::Arc.build(2);
    let trace = [1, 1, 2, 3, 2, 1, 3, 1];
    let mut evicted = Vec::new();
    let mut pattern = String::new();
    for key in trace {
        if arc.get(key).is_some() {
            pattern.push('H');
        } else {
            pattern.push('M');
            evicted.extend(arc.insert(key).evicted);
        }
    }
    assert_eq!(pattern, "MHMMMMMH");
    assert_eq!(evicted, [2, 1, 3, 2]);
    // LRU on the same trace keeps 2 and hits it.
    let mut lru = PolicyName::Lru.build(2);
    assert_eq!(replay(lru.as_mut(), &trace), "MHMMHMMH");
}

#[test]
fn policy_frames_are_unique_and_key_of_agrees() {
    for name in PolicyName::ALL {
        let capacity = 50;
        let mut policy = name.build(capacity);
        let mut state: u64 = 7;
        for _ in 0..5_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = (state >> 33) % 200;
            if policy.get(key).is_none() {
                let inserted = policy.insert(key);
                assert!((inserted.frame as usize) < capacity);
                if let Some(old) = inserted.evicted {
                    assert_eq!(policy.peek(old), None, "{name}: evicted key still resident");
                }
            }
            assert_eq!(
                policy.key_of(policy.peek(key).unwrap()),
                Some(key),
                "{name}"
            );
            assert!(policy.len() <= capacity, "{name}");
        }
        let mut frames: Vec<u32> = (0..200).filter_map(|key| policy.peek(key)).collect();
        assert_eq!(frames.len(), policy.len(), "{name}");
        frames.sort_unstable();
        frames.dedup();
        assert_eq!(frames.len(), policy.len(), "{name}: two keys share a frame");
    }
}
