//! The job array files of `docs/shards/` do what they say: the Slurm
//! script run as a 4-task array, and the Kubernetes Indexed Job checked
//! against a strict schema of the Job API fields it uses and run as its 4
//! pods would run (processes with the variables Kubernetes sets; as root,
//! each in a network namespace of its own, joined to the server's by a
//! veth pair the test makes and removes).

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{flexio, is_root, serve, stderr, tree_contents as contents, Serving};
use serde::Deserialize;

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/shards")
}

/// A small tree with a file large enough to be split four ways.
fn tree(root: &Path) {
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    for i in 0..20u32 {
        std::fs::write(
            root.join(format!("a/f{i}")),
            i.to_le_bytes().repeat(1000 + 50 * i as usize),
        )
        .unwrap();
    }
    let big: Vec<u8> = (0..(6u32 << 20) + 5)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(root.join("a/b/big"), big).unwrap();
    std::os::unix::fs::symlink("b/big", root.join("a/link")).unwrap();
}

/// `flexio` as the script and the pod call it: by name, from PATH.
fn path_with_flexio() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_flexio"))
        .parent()
        .unwrap()
        .display()
        .to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

#[test]
fn the_slurm_array_script_run_as_its_array_fetches_the_tree_once() {
    let script = docs().join("flexio-get-array.sbatch");
    let text = std::fs::read_to_string(&script).unwrap();
    // The array the script asks Slurm for: `#SBATCH --array=0-3`.
    let array = text
        .lines()
        .find_map(|line| line.strip_prefix("#SBATCH --array="))
        .expect("an #SBATCH --array line");
    let (first, last) = array.split_once('-').unwrap();
    let (first, last): (u32, u32) = (first.parse().unwrap(), last.parse().unwrap());
    let served = tempfile::tempdir().unwrap();
    tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("shared");
    let tasks: Vec<_> = (first..=last)
        .map(|id| {
            Command::new("bash")
                .arg(&script)
                .env("PATH", path_with_flexio())
                .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
                .env("FLEXIO_URL", format!("{url}/t/"))
                .env("FLEXIO_DEST", &dest)
                .env("SLURM_ARRAY_TASK_ID", id.to_string())
                .env("SLURM_ARRAY_TASK_MIN", first.to_string())
                .env("SLURM_ARRAY_TASK_COUNT", (last - first + 1).to_string())
                .env("SLURM_CPUS_PER_TASK", "2")
                .env_remove("JOB_COMPLETION_INDEX")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for task in tasks {
        let output = task.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        // The summary, on stderr (`-v`: a job's output is no terminal).
        let said = stderr(&output);
        assert!(
            said.contains(&format!("of {}:", last - first + 1)),
            "{said}"
        );
    }
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
}

// The Job API fields the manifest uses (batch/v1 Job, core/v1 PodSpec),
// each type refusing any field it does not list: a misspelt or misplaced
// field fails the check, as `kubeconform -strict` would fail it. Some
// fields are only checked for their type, never read.

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Job {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: JobSpec,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectMeta {
    name: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JobSpec {
    completion_mode: String,
    completions: i32,
    parallelism: Option<i32>,
    backoff_limit: Option<i32>,
    backoff_limit_per_index: Option<i32>,
    max_failed_indexes: Option<i32>,
    template: PodTemplateSpec,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PodTemplateSpec {
    metadata: Option<ObjectMeta>,
    spec: PodSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodSpec {
    restart_policy: String,
    containers: Vec<Container>,
    #[serde(default)]
    volumes: Vec<Volume>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Container {
    name: String,
    image: String,
    command: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<EnvVar>,
    #[serde(default)]
    volume_mounts: Vec<VolumeMount>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvVar {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VolumeMount {
    name: String,
    mount_path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Volume {
    name: String,
    persistent_volume_claim: Option<ClaimSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ClaimSource {
    claim_name: String,
}

/// The manifest, checked against the schema above and the API's rules
/// that a type cannot say.
fn checked_job(text: &str) -> Result<Job, String> {
    let job: Job = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let spec = &job.spec;
    let pod = &spec.template.spec;
    let rules = [
        (job.api_version == "batch/v1", "apiVersion batch/v1"),
        (job.kind == "Job", "kind Job"),
        (
            job.metadata.name.as_deref().is_some_and(|n| !n.is_empty()),
            "a name",
        ),
        (spec.completion_mode == "Indexed", "completionMode Indexed"),
        (spec.completions > 0, "completions above 0"),
        (
            spec.parallelism.is_none_or(|p| p > 0),
            "parallelism above 0",
        ),
        (
            spec.backoff_limit_per_index.is_none() || pod.restart_policy == "Never",
            "backoffLimitPerIndex with restartPolicy Never",
        ),
        (
            spec.max_failed_indexes.is_none() || spec.backoff_limit_per_index.is_some(),
            "maxFailedIndexes with backoffLimitPerIndex",
        ),
        (
            matches!(pod.restart_policy.as_str(), "Never" | "OnFailure"),
            "a Job's restartPolicy Never or OnFailure",
        ),
        (!pod.containers.is_empty(), "a container"),
        (
            pod.containers
                .iter()
                .all(|c| !c.name.is_empty() && !c.image.is_empty()),
            "each container named, with an image",
        ),
        (
            pod.containers
                .iter()
                .flat_map(|c| &c.volume_mounts)
                .all(|m| {
                    m.mount_path.starts_with('/') && pod.volumes.iter().any(|v| v.name == m.name)
                }),
            "each volume mount an absolute path naming a volume",
        ),
        (
            pod.volumes.iter().all(|v| {
                v.persistent_volume_claim
                    .as_ref()
                    .is_some_and(|c| !c.claim_name.is_empty())
            }),
            "each volume a claim",
        ),
    ];
    for (holds, rule) in rules {
        if !holds {
            return Err(format!("the manifest breaks the rule: {rule}"));
        }
    }
    Ok(job)
}

/// A container's command line as Kubernetes runs it: `$(NAME)` replaced
/// by the container's variable NAME.
fn expand(word: &str, env: &BTreeMap<String, String>) -> String {
    let mut word = word.to_string();
    for (name, value) in env {
        word = word.replace(&format!("$({name})"), value);
    }
    word
}

#[test]
fn the_indexed_job_manifest_passes_the_schema_and_a_broken_one_does_not() {
    let text = std::fs::read_to_string(docs().join("flexio-get-indexed-job.json")).unwrap();
    let job = checked_job(&text).unwrap();
    let container = &job.spec.template.spec.containers[0];
    let words: Vec<&str> = container
        .command
        .iter()
        .chain(&container.args)
        .map(String::as_str)
        .collect();
    let at = words.iter().position(|w| *w == "--shard").expect("--shard");
    assert_eq!(
        words[at + 1],
        format!("auto/{}", job.spec.completions),
        "the count the pods are given is the Job's completions"
    );
    // The schema can fail: a misspelt field, a wrong type, a broken rule.
    for (from, to) in [
        ("\"completionMode\"", "\"completionMod\""),
        ("\"completions\": 4", "\"completions\": \"4\""),
        (
            "\"restartPolicy\": \"Never\"",
            "\"restartPolicy\": \"Always\"",
        ),
        ("\"mountPath\": \"/data\"", "\"mountPath\": \"data\""),
    ] {
        assert!(text.contains(from), "{from}");
        assert!(
            checked_job(&text.replacen(from, to, 1)).is_err(),
            "{to} passed"
        );
    }
}

/// Network namespaces joined to the server's by one veth pair per pod,
/// removed when dropped. Link-local addresses, inside namespaces only.
struct PodNetwork {
    server: String,
    pods: Vec<String>,
}

impl PodNetwork {
    fn create(count: u32) -> PodNetwork {
        let tag = std::process::id();
        let network = PodNetwork {
            server: format!("flexio-shard-{tag}-srv"),
            pods: (0..count)
                .map(|k| format!("flexio-shard-{tag}-pod{k}"))
                .collect(),
        };
        let ip = |args: &[&str]| {
            let output = Command::new("ip").args(args).output().unwrap();
            assert!(output.status.success(), "ip {args:?}: {}", stderr(&output));
        };
        ip(&["netns", "add", &network.server]);
        ip(&["-n", &network.server, "link", "set", "lo", "up"]);
        for (k, pod) in network.pods.iter().enumerate() {
            let (outer, inner) = (format!("fxs{tag}s{k}"), format!("fxs{tag}p{k}"));
            ip(&["netns", "add", pod]);
            ip(&[
                "link",
                "add",
                "name",
                &outer,
                "netns",
                &network.server,
                "type",
                "veth",
                "peer",
                "name",
                &inner,
                "netns",
                pod,
            ]);
            let (server_addr, pod_addr) = (
                format!("169.254.{}.1/30", 90 + k),
                format!("169.254.{}.2/30", 90 + k),
            );
            ip(&[
                "-n",
                &network.server,
                "addr",
                "add",
                &server_addr,
                "dev",
                &outer,
            ]);
            ip(&["-n", pod, "addr", "add", &pod_addr, "dev", &inner]);
            ip(&["-n", &network.server, "link", "set", &outer, "up"]);
            ip(&["-n", pod, "link", "set", &inner, "up"]);
        }
        network
    }
}

impl Drop for PodNetwork {
    fn drop(&mut self) {
        for ns in self.pods.iter().chain([&self.server]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

#[test]
fn the_indexed_job_run_as_its_pods_fetches_the_tree_once() {
    let text = std::fs::read_to_string(docs().join("flexio-get-indexed-job.json")).unwrap();
    let job = checked_job(&text).unwrap();
    let pods = job.spec.completions as u32;
    let container = &job.spec.template.spec.containers[0];
    let served = tempfile::tempdir().unwrap();
    tree(&served.path().join("t"));
    let volume = tempfile::tempdir().unwrap();
    let mount = &container.volume_mounts[0].mount_path;
    let has_ip = Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    let in_namespaces = common::require_root("the pods' network namespaces") && has_ip;
    if is_root() && !has_ip {
        eprintln!("skipped: the pods' network namespaces (no `ip` command)");
    }
    let network = in_namespaces.then(|| PodNetwork::create(pods));
    if network.is_none() {
        eprintln!("the pods run on loopback instead");
    }
    // The server: in its own namespace, or on loopback.
    let (_server, base_for): (Serving, Box<dyn Fn(u32) -> String>) = match &network {
        Some(network) => {
            let mut child = Command::new("ip")
                .args(["netns", "exec", &network.server])
                .arg(env!("CARGO_BIN_EXE_flexio"))
                .args(["serve", "--listen", "0.0.0.0:0", "--public"])
                .arg(served.path())
                .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            let port: u16 = line
                .split("://0.0.0.0:")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("no port in {line:?}"));
            (
                Serving(child),
                Box::new(move |k| format!("http://169.254.{}.1:{port}", 90 + k)),
            )
        }
        None => {
            let (server, url) = serve(served.path(), &[]);
            (server, Box::new(move |_| url.clone()))
        }
    };
    let running: Vec<_> = (0..pods)
        .map(|k| {
            // The pod's variables: the manifest's, the test server's URL
            // for FLEXIO_URL, and what Kubernetes adds to an Indexed Job.
            let mut env: BTreeMap<String, String> = container
                .env
                .iter()
                .map(|v| (v.name.clone(), v.value.clone()))
                .collect();
            env.insert("FLEXIO_URL".into(), format!("{}/t/", base_for(k)));
            let words: Vec<String> = container
                .command
                .iter()
                .chain(&container.args)
                .map(|w| expand(w, &env))
                .map(|w| match w.strip_prefix(mount.as_str()) {
                    Some(rest) => format!("{}{rest}", volume.path().display()),
                    None => w,
                })
                .collect();
            assert_eq!(words[0], "flexio");
            let mut command = match &network {
                Some(network) => {
                    let mut c = Command::new("ip");
                    c.args(["netns", "exec", &network.pods[k as usize]]);
                    c.arg(env!("CARGO_BIN_EXE_flexio"));
                    c
                }
                None => flexio(),
            };
            command
                .args(&words[1..])
                .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
                .env("JOB_COMPLETION_INDEX", k.to_string())
                .env_remove("SLURM_ARRAY_TASK_ID")
                .envs(&env)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for pod in running {
        let output = pod.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let dest = volume.path().join("tree");
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    drop(network);
}

#[test]
fn the_slurm_script_takes_shard_and_streams_from_flexio_get_args_outside_an_array() {
    let script = docs().join("flexio-get-array.sbatch");
    let served = tempfile::tempdir().unwrap();
    tree(&served.path().join("t"));
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("shared");
    // No array variables: `--shard auto` would fail; the flags given win.
    let tasks: Vec<_> = (0..2)
        .map(|k| {
            Command::new("bash")
                .arg(&script)
                .env("PATH", path_with_flexio())
                .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
                .env("FLEXIO_URL", format!("{url}/t/"))
                .env("FLEXIO_DEST", &dest)
                .env(
                    "FLEXIO_GET_ARGS",
                    format!("--json --shard {k}/2 --streams=1"),
                )
                .env_remove("FLEXIO_SHARD")
                .env_remove("SLURM_ARRAY_TASK_ID")
                .env_remove("JOB_COMPLETION_INDEX")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (k, task) in tasks.into_iter().enumerate() {
        let report = common::json_report(&task.wait_with_output().unwrap());
        assert_eq!(report["shard"]["index"], k);
        assert_eq!(report["shard"]["count"], 2);
        assert_eq!(report["streams"], 1);
    }
    assert_eq!(contents(&served.path().join("t")), contents(&dest));
    // FLEXIO_SHARD=id/N outside an array says what it needs.
    let output = Command::new("bash")
        .arg(&script)
        .env("PATH", path_with_flexio())
        .env("FLEXIO_URL", format!("{url}/t/"))
        .env("FLEXIO_DEST", &dest)
        .env("FLEXIO_SHARD", "id/4")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("SLURM_ARRAY_TASK_ID"),
        "{}",
        stderr(&output)
    );
}
