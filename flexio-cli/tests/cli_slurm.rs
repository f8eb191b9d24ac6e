//! The shipped Slurm script under a real Slurm: a one-node cluster (munged,
//! slurmctld and slurmd, as root, everything in a temporary directory and
//! on 127.0.0.1) runs `docs/shards/flexio-get-array.sbatch` as an array of
//! 4 against a `flexio serve` on loopback. The tree arrives byte-exact,
//! each task fetches a quarter of its bytes, a task requeued while it runs
//! (`scontrol requeue JOB_TASK`) finishes cleanly, and nothing is left
//! behind in the destination. Skips without Slurm or root, except under
//! `FLEXIO_TEST_PRIVILEGED=1` (CI installs Debian's `slurm-wlm` and
//! `munge`).

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{require_feature, require_root, serve, tree_contents as contents};
use flexio_testkit::free_port;

/// What the cluster needs: the daemons and the commands the test runs.
const SLURM_PROGRAMS: [&str; 6] = [
    "munged",
    "slurmctld",
    "slurmd",
    "sbatch",
    "scontrol",
    "sinfo",
];

/// How long the array may take, requeue included.
const JOB_BOUND: Duration = Duration::from_secs(120);

/// A line for the CI log, past the harness's capture (as `skipped` does),
/// tagged with the cluster's test (the two run at once).
fn say(tag: &str, line: &str) {
    let _ = std::io::stderr().write_all(format!("slurm {tag}: {line}\n").as_bytes());
}

/// The first program of [`SLURM_PROGRAMS`] not on PATH.
fn missing_program() -> Option<&'static str> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    // The daemons are in sbin, which a test's PATH may lack.
    dirs.extend(["/usr/sbin", "/sbin"].map(PathBuf::from));
    SLURM_PROGRAMS
        .into_iter()
        .find(|name| !dirs.iter().any(|dir| dir.join(name).is_file()))
}

/// Where `name` is: on PATH or in sbin.
fn program(name: &str) -> PathBuf {
    ["/usr/sbin", "/sbin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// This host's short name (`hostname -s`), as slurmd finds its node.
fn short_hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    name.trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A one-node Slurm cluster of its own: munged, slurmctld and slurmd run
/// from a temporary directory, talking over 127.0.0.1 only. Dropped (also
/// when the test fails), it cancels its jobs, waits for them to end,
/// stops the daemons and removes the directory.
struct Cluster {
    /// Which test's cluster, in the lines it prints.
    tag: &'static str,
    dir: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
}

impl Cluster {
    fn start(tag: &'static str) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        // The guard, from the first daemon on.
        let mut cluster = Cluster {
            tag,
            conf: dir.path().join("slurm.conf"),
            dir,
            daemons: Vec::new(),
        };
        let at = |name: &str| cluster.dir.path().join(name);
        for sub in ["state", "spool"] {
            std::fs::create_dir(at(sub)).unwrap();
        }
        let mut key = vec![0u8; 1024];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut key)
            .unwrap();
        common::write_with_mode(&at("munge.key"), &key, 0o600);
        let socket = at("munge.socket");
        let munged = Command::new(program("munged"))
            .arg("--foreground")
            .arg(format!("--key-file={}", at("munge.key").display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", at("munged.pid").display()))
            .arg(format!("--seed-file={}", at("munged.seed").display()))
            .arg(format!("--log-file={}", at("munged.log").display()))
            .arg("--origin=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(at("munged.out")).unwrap())
            .spawn()
            .unwrap();
        cluster.daemons.push(("munged", munged));
        common::wait_until("munged's socket", || socket.exists());
        let host = short_hostname();
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        std::fs::write(&cluster.conf, config(cluster.dir.path(), &host, cpus)).unwrap();
        for (name, flags) in [("slurmctld", &["-D", "-c"][..]), ("slurmd", &["-D"][..])] {
            let child = Command::new(program(name))
                .args(flags)
                .arg("-f")
                .arg(&cluster.conf)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(at(&format!("{name}.out"))).unwrap())
                .spawn()
                .unwrap();
            cluster.daemons.push((name, child));
        }
        let started = Instant::now();
        while cluster.node_state().as_deref() != Some("idle") {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the node is not idle after 30 s ({:?}); {}",
                cluster.node_state(),
                cluster.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        cluster.say(&format!(
            "one-node cluster on {host} ({cpus} CPUs, {}), up in {:.1} s",
            cluster.version(),
            started.elapsed().as_secs_f64()
        ));
        cluster
    }

    fn say(&self, line: &str) {
        say(self.tag, line);
    }

    /// A Slurm command against this cluster.
    fn command(&self, name: &str) -> Command {
        let mut command = Command::new(program(name));
        command.env("SLURM_CONF", &self.conf);
        command
    }

    fn run(&self, name: &str, args: &[&str]) -> String {
        let output = self.command(name).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{name} {args:?}: {}",
            common::stderr(&output)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn node_state(&self) -> Option<String> {
        let output = self
            .command("sinfo")
            .args(["-h", "-o", "%t"])
            .output()
            .ok()?;
        let state = String::from_utf8_lossy(&output.stdout).trim().to_string();
        (output.status.success() && !state.is_empty()).then_some(state)
    }

    fn version(&self) -> String {
        self.run("sinfo", &["--version"]).trim().to_string()
    }

    /// The array job's tasks as `scontrol show job -o` tells them.
    fn tasks(&self, job: &str) -> Vec<Task> {
        let mut tasks: Vec<Task> = self
            .run("scontrol", &["show", "job", "-o", job])
            .lines()
            .filter_map(Task::parse)
            .collect();
        tasks.sort_by_key(|task| task.id);
        tasks
    }

    /// The daemons' own words, for a failure's message.
    fn logs(&self) -> String {
        let mut said = String::new();
        for name in ["munged.out", "slurmctld.out", "slurmd.out"] {
            let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            said += &format!("\n--- {name} (last lines)\n");
            for line in tail.into_iter().rev() {
                said += line;
                said += "\n";
            }
        }
        said
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first: slurmstepd and the tasks outlive slurmd.
        let _ = self
            .command("scancel")
            .arg("--full")
            .arg("--user=root")
            .output();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            let output = self.command("squeue").args(["-h", "-t", "R,CG"]).output();
            if output.is_ok_and(|o| o.status.success() && o.stdout.is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            let pid = rustix::process::Pid::from_child(child);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            let stopped = Instant::now();
            while child.try_wait().ok().flatten().is_none() {
                if stopped.elapsed() > Duration::from_secs(10) {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// A minimal slurm.conf: this host the one node with its CPUs, daemons
/// and state in `dir`, no cgroups (linuxproc tracks processes), no
/// accounting, and requeued jobs eligible again after 5 s (the job
/// credential's lifetime, 120 s by default).
fn config(dir: &Path, host: &str, cpus: usize) -> String {
    let at = |name: &str| dir.join(name).display().to_string();
    format!(
        "ClusterName=flexiotest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket},cred_expire=5
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={ctld_pid}
SlurmdPidFile={slurmd_pid}
SlurmctldLogFile={ctld_log}
SlurmdLogFile={slurmd_log}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=flexio Nodes={host} Default=YES MaxTime=INFINITE State=UP
",
        ctld = free_port(),
        slurmd = free_port(),
        socket = at("munge.socket"),
        state = at("state"),
        spool = at("spool"),
        ctld_pid = at("slurmctld.pid"),
        slurmd_pid = at("slurmd.pid"),
        ctld_log = at("slurmctld.log"),
        slurmd_log = at("slurmd.log"),
    )
}

/// One array task as `scontrol show job -o` prints it.
#[derive(Debug)]
struct Task {
    id: u32,
    state: String,
    exit: String,
    restarts: u32,
}

impl Task {
    /// Whether the task is over, well or not (no more to wait for).
    fn ended(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "REQUEUED"
                | "REQUEUE_HOLD"
                | "REQUEUE_FED"
                | "COMPLETING"
                | "CONFIGURING"
                | "SUSPENDED"
                | "RESIZING"
        )
    }

    fn parse(line: &str) -> Option<Task> {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
        };
        Some(Task {
            id: field("ArrayTaskId")?.parse().ok()?,
            state: field("JobState")?.to_string(),
            exit: field("ExitCode")?.to_string(),
            restarts: field("Restarts")?.parse().ok()?,
        })
    }
}

/// A tree of 16 MiB: small files, and two large ones the cuts fall in.
fn tree(root: &Path) -> u64 {
    std::fs::create_dir_all(root.join("small/deeper")).unwrap();
    std::fs::create_dir_all(root.join("big")).unwrap();
    let mut total = 0;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut bytes = |length: usize| -> Vec<u8> {
        (0..length)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    };
    for i in 0..40u64 {
        let place = if i % 3 == 0 { "small/deeper" } else { "small" };
        let length = 1000 + (i * 7919 % 32) as usize * 1024;
        std::fs::write(root.join(format!("{place}/f{i:02}")), bytes(length)).unwrap();
        total += length as u64;
    }
    for (name, length) in [("a", (9 << 20) + 4321), ("b", (6 << 20) + 7)] {
        std::fs::write(root.join("big").join(name), bytes(length)).unwrap();
        total += length as u64;
    }
    std::fs::write(root.join("empty"), b"").unwrap();
    std::os::unix::fs::symlink("big/a", root.join("link")).unwrap();
    total
}

/// Names anywhere below `root` that are not the tree's: partial files,
/// journals and coordination directories are hidden (`.NAME.flexio-…`,
/// `.flexio-shards-ID`); any name with `.flexio-` in it counts too.
fn hidden_names(root: &Path) -> Vec<String> {
    contents(root)
        .into_keys()
        .filter(|path| {
            let name = path.rsplit('/').next().unwrap();
            name.starts_with('.') || name.contains(".flexio-")
        })
        .collect()
}

/// Whether Slurm is installed and this test may start its daemons (root);
/// otherwise the test says why it skips — or fails, under
/// `FLEXIO_TEST_PRIVILEGED=1`.
fn slurm_runs_here() -> bool {
    if let Some(name) = missing_program() {
        let why = format!("{name} is not installed (Debian: slurm-wlm, munge)");
        return require_feature("a Slurm cluster", Err(why));
    }
    require_root("a Slurm cluster's daemons")
}

/// The shipped script.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/shards/flexio-get-array.sbatch")
}

/// Submits the shipped script (with `sbatch_args` before it, and the
/// variables `vars` besides FLEXIO, FLEXIO_URL and FLEXIO_DEST) from
/// `out`, each task writing `out/task-ID.out` (its JSON report) and
/// `.err` (appended to, across a requeue); returns the job id.
fn submit(
    cluster: &Cluster,
    out: &Path,
    (url, dest): (&str, &Path),
    sbatch_args: &[&str],
    vars: &[(&str, &str)],
) -> String {
    std::fs::create_dir_all(out).unwrap();
    let task_file = |ext: &str| out.join(format!("task-%a.{ext}"));
    let submitted = cluster
        .command("sbatch")
        .arg("--parsable")
        .arg(format!("--output={}", task_file("out").display()))
        .arg(format!("--error={}", task_file("err").display()))
        .arg("--open-mode=append")
        .args(sbatch_args)
        .arg(script())
        .current_dir(out)
        .env("FLEXIO", env!("CARGO_BIN_EXE_flexio"))
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .env("FLEXIO_URL", url)
        .env("FLEXIO_DEST", dest)
        .env_remove("FLEXIO_SHARD")
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    assert!(
        submitted.status.success(),
        "sbatch: {}",
        common::stderr(&submitted)
    );
    String::from_utf8_lossy(&submitted.stdout)
        .trim()
        .to_string()
}

#[test]
fn the_sbatch_script_under_slurm_fetches_a_quarter_each_and_survives_a_requeue() {
    let started = Instant::now();
    if !slurm_runs_here() {
        return;
    }
    let served = tempfile::tempdir().unwrap();
    let total = tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("shared");
    // Declared last, dropped first: no job outlives the directories.
    let cluster = Cluster::start("requeue");
    // Each task at 2 MB/s: about 2 s for its quarter, so task 2 is still
    // fetching when it is requeued.
    let job = submit(
        &cluster,
        out.path(),
        (&format!("{url}/t/"), &dest),
        &[],
        &[("FLEXIO_GET_ARGS", "--json --rate 2M")],
    );
    cluster.say(&format!(
        "job {job}: {} as an array of 4 (its #SBATCH --array=0-3), tree of {total} bytes from {url}",
        script().file_name().unwrap().to_string_lossy()
    ));
    // Task 2, once it has run for a while, is killed and put back in the
    // queue; Slurm runs it again, with the same array variables.
    wait_for(&cluster, &job, "task 2 running", |tasks| {
        tasks.iter().any(|t| t.id == 2 && t.state == "RUNNING")
    });
    let running_since = Instant::now();
    std::thread::sleep(Duration::from_millis(800));
    let still = cluster.tasks(&job);
    assert!(
        still.iter().any(|t| t.id == 2 && t.state == "RUNNING"),
        "task 2 finished within 0.8 s, before it could be requeued: {still:?}"
    );
    let litter_while_running = hidden_names(&dest);
    cluster.run("scontrol", &["requeue", &format!("{job}_2")]);
    cluster.say(&format!(
        "task 2 requeued while running (scontrol requeue {job}_2), {:.1} s after it started; hidden names in DEST then: {}",
        running_since.elapsed().as_secs_f64(),
        litter_while_running.len()
    ));
    let requeued = Instant::now();
    let tasks = wait_for(&cluster, &job, "every task done", |tasks| {
        tasks.len() == 4
            && tasks.iter().all(|t| t.restarts > 0 || t.id != 2)
            && tasks.iter().all(Task::ended)
    });
    let read = |id: u32, ext: &str| {
        std::fs::read_to_string(out.path().join(format!("task-{id}.{ext}"))).unwrap_or_default()
    };
    let mut finishers = 0;
    let mut fetched = 0;
    for task in &tasks {
        assert!(
            task.state == "COMPLETED" && task.exit == "0:0",
            "task {} ended {} ({}): {}{}",
            task.id,
            task.state,
            task.exit,
            read(task.id, "err"),
            cluster.logs()
        );
        let report: serde_json::Value =
            serde_json::from_str(&read(task.id, "out")).unwrap_or_else(|e| {
                panic!(
                    "task {}'s output is not its JSON report ({e}): {}",
                    task.id,
                    read(task.id, "out")
                )
            });
        let shard = &report["shard"];
        assert_eq!(shard["index"], task.id);
        assert_eq!(shard["count"], 4);
        let bytes = shard["bytes"].as_u64().unwrap();
        let share = bytes as f64 / total as f64;
        assert!(
            (share - 0.25).abs() < 0.01,
            "task {} took {bytes} of {total} bytes ({:.2}%)",
            task.id,
            share * 100.0
        );
        fetched += bytes;
        finishers += usize::from(shard["finished_tree"] == true);
        cluster.say(&format!(
            "task {}: {} {}, restarts {}, {bytes} bytes ({:.2}%), {} whole files and {} ranges{}",
            task.id,
            task.state,
            task.exit,
            task.restarts,
            share * 100.0,
            shard["whole_files"],
            shard["ranges"],
            if shard["finished_tree"] == true {
                ", finished the tree"
            } else {
                ""
            }
        ));
    }
    assert_eq!(fetched, total, "the tasks' parts add up to the tree");
    assert_eq!(finishers, 1, "exactly one task finishes the tree");
    let task2 = tasks.iter().find(|t| t.id == 2).unwrap();
    assert_eq!(task2.restarts, 1, "task 2 ran twice");
    assert!(
        read(2, "err").contains("DUE TO JOB REQUEUE"),
        "task 2's first run was killed by the requeue: {}",
        read(2, "err")
    );
    assert_eq!(
        contents(&served.path().join("t")),
        contents(&dest),
        "the tree, byte-exact"
    );
    assert_eq!(hidden_names(&dest), Vec::<String>::new(), "litter in DEST");
    cluster.say(&format!(
        "tree byte-exact, no hidden names left in DEST; requeued task done {:.1} s after the requeue; {:.1} s in all",
        requeued.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    ));
    drop(cluster);
}

/// Polls the job's tasks until `done` holds, and returns them; fails
/// after [`JOB_BOUND`] with what each task says.
fn wait_for(cluster: &Cluster, job: &str, what: &str, done: impl Fn(&[Task]) -> bool) -> Vec<Task> {
    let started = Instant::now();
    loop {
        let tasks = cluster.tasks(job);
        if done(&tasks) {
            return tasks;
        }
        assert!(
            started.elapsed() < JOB_BOUND,
            "{what}: not after {JOB_BOUND:?}: {tasks:?}{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Each task's JSON report, from `out/task-ID.out`, once every task of
/// `job` is over; fails naming a task that did not complete.
fn reports(cluster: &Cluster, job: &str, out: &Path, count: usize) -> Vec<serde_json::Value> {
    let tasks = wait_for(cluster, job, "every task done", |tasks| {
        tasks.len() == count && tasks.iter().all(Task::ended)
    });
    let read = |id: u32, ext: &str| {
        std::fs::read_to_string(out.join(format!("task-{id}.{ext}"))).unwrap_or_default()
    };
    let mut reports = Vec::new();
    for task in &tasks {
        assert!(
            task.state == "COMPLETED" && task.exit == "0:0",
            "task {} ended {} ({}): {}{}",
            task.id,
            task.state,
            task.exit,
            read(task.id, "err"),
            cluster.logs()
        );
        let report: serde_json::Value = serde_json::from_str(&read(task.id, "out"))
            .unwrap_or_else(|e| panic!("task {}: no JSON report ({e})", task.id));
        assert_eq!(
            report["shard"]["index"], task.id,
            "listed ids are the parts"
        );
        assert_eq!(report["shard"]["count"], 4);
        cluster.say(&format!(
            "job {job} task {}: {}, shard {}/4, {} bytes, {} files fetched, {} unchanged{}",
            task.id,
            task.state,
            task.id,
            report["shard"]["bytes"],
            report["files"],
            report["unchanged"],
            if report["shard"]["finished_tree"] == true {
                ", finished the tree"
            } else {
                ""
            }
        ));
        reports.push(report);
    }
    reports
}

#[test]
fn listed_id_arrays_with_flexio_shard_id_fetch_their_parts_and_a_late_task_leaves_nothing() {
    let started = Instant::now();
    if !slurm_runs_here() {
        return;
    }
    let served = tempfile::tempdir().unwrap();
    tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    let url = format!("{url}/t/");
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("shared");
    let cluster = Cluster::start("listed");
    let listed = |phase: &str, ids: &str| {
        let phase_out = out.path().join(phase);
        let job = submit(
            &cluster,
            &phase_out,
            (&url, &dest),
            &[&format!("--array={ids}")],
            &[("FLEXIO_SHARD", "id/4"), ("FLEXIO_GET_ARGS", "--json")],
        );
        cluster.say(&format!(
            "job {job}: --array={ids} with FLEXIO_SHARD=id/4 ({phase})"
        ));
        let count = ids.split(',').count();
        reports(&cluster, &job, &phase_out, count)
    };
    // Half the parts, as if tasks 1 and 3 of a 0-3 array had failed.
    let first = listed("first", "0,2");
    assert!(first.iter().all(|r| r["shard"]["finished_tree"] == false));
    assert!(
        hidden_names(&dest)
            .iter()
            .any(|n| n.starts_with(".flexio-shards-")),
        "the parts not yet fetched are awaited in the coordination directory"
    );
    // The missing parts, by their ids, long after: the tree is finished.
    let rest = listed("rest", "1,3");
    let finishers = rest
        .iter()
        .filter(|r| r["shard"]["finished_tree"] == true)
        .count();
    assert_eq!(finishers, 1, "the last of the four finishes the tree");
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    assert_eq!(hidden_names(&dest), Vec::<String>::new(), "litter in DEST");
    // A task run once more after the tree is whole: nothing fetched, and
    // no coordination directory made and left behind.
    let late = listed("late", "2");
    assert_eq!(late[0]["files"], 0);
    assert_eq!(late[0]["shard"]["finished_tree"], false);
    assert_eq!(
        hidden_names(&dest),
        Vec::<String>::new(),
        "a late task left litter"
    );
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    cluster.say(&format!(
        "listed ids: tree byte-exact, no hidden names left in DEST; {:.1} s in all",
        started.elapsed().as_secs_f64()
    ));
    drop(cluster);
}
