//! The exhibits that wait: on a device throttled to 256 KiB/s, a bucket
//! the clients share, a memory group's writeback. Each spends a minute or
//! two mostly asleep (4–13 s of CPU in 35–110 s; Cue's Tables 1–6, with
//! its meter spinning beside the throttled transfers, 68 s in 145 s), so they run side
//! by side in one test instead of holding both of the pool's threads for
//! eight minutes in all. Each makes its own devices, groups and
//! directories, named by its process, so none sees another's.

use crate::{cli_bench_seeds as seeds, cli_bench_thesis as thesis};

#[test]
fn the_exhibits_that_wait_on_slow_devices_pass_side_by_side() {
    let checks: [(&str, fn()); 6] = [
        (
            "cue_tables_1_2_3_and_6",
            seeds::cue_tables_1_2_3_and_6_run_cues_schedules_warm_and_disk_bound_at_an_equal_rate,
        ),
        (
            "cue_table_8",
            seeds::cue_table_8_runs_the_servers_behind_one_shared_bucket,
        ),
        (
            "smack_tables",
            seeds::smack_tables_have_every_row_and_axis_and_leave_no_loop_device,
        ),
        (
            "flexio_4_7_and_4_11",
            thesis::flexio_4_7_and_4_11_run_every_setting_on_throttled_devices_and_leave_none,
        ),
        (
            "sigterm_during_the_cgroup_copies",
            thesis::sigterm_during_the_cgroup_copies_leaves_no_memory_group_behind,
        ),
        (
            "with_dir_on_tmpfs",
            thesis::with_dir_on_tmpfs_the_cgroup_copies_run_on_the_throttled_device,
        ),
    ];
    // Each check in a thread of its name, so that its panic says which.
    let failed: Vec<&str> = std::thread::scope(|scope| {
        let running: Vec<_> = checks
            .iter()
            .map(|&(name, check)| {
                let thread = std::thread::Builder::new()
                    .name(name.to_string())
                    .spawn_scoped(scope, check)
                    .unwrap();
                (name, thread)
            })
            .collect();
        running
            .into_iter()
            .filter_map(|(name, thread)| thread.join().is_err().then_some(name))
            .collect()
    });
    assert!(failed.is_empty(), "failed (their panics above): {failed:?}");
}
