//! How `serve`'s workers share the connections: clients that connect
//! together spread over the workers, so no worker's thread carries most
//! of them while others idle (at 64 wrk connections, one worker of eight
//! held 33 and three held none: the 4 KiB p99 tail against nginx).

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::RawClient;
use flexio_net::server::{ServeConfig, Server};

/// The tests here look at every worker thread of the process: one at a
/// time.
static ONE_SERVER: Mutex<()> = Mutex::new(());

#[test]
fn connections_opened_together_spread_over_the_workers() {
    let _alone = ONE_SERVER.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), vec![5u8; 4096]).unwrap();
    let workers = 8;
    let clients = 64;
    let mut config = ServeConfig::new(root.path().to_path_buf());
    config.workers = workers;
    let handle = Server::bind(config).unwrap().spawn().unwrap();
    let address = handle.local_addr();
    // All connect before any asks: they wait in the backlog together,
    // as a load generator's connections do.
    let mut connections: Vec<RawClient> =
        (0..clients).map(|_| RawClient::connect(address)).collect();
    for client in &mut connections {
        let response = client.get("/f", "");
        assert_eq!((response.status, response.body.len()), (200, 4096));
    }
    let all_held = flexio_testkit::wait_until(
        || handle.connections_by_worker().iter().sum::<usize>() == clients,
        Duration::from_secs(10),
    );
    let held = handle.connections_by_worker();
    assert!(all_held, "{held:?}");
    // An even share is 8; a worker takes its share and one more, and one
    // connection past that when it is woken for it.
    let most = clients / workers + 2;
    assert!(
        held.iter().all(|&count| count <= most),
        "connections by worker: {held:?} (at most {most} each)"
    );
    // And each still answers on its connection.
    for client in &mut connections {
        assert_eq!(client.get("/f", "").status, 200);
    }
    drop(connections);
    handle.shutdown();
    handle.wait();
}

/// The CPUs each of this process's `serve-worker` threads may run on, as
/// `/proc` lists them (`0-1`, `1`).
fn workers_cpus() -> Vec<String> {
    let mut cpus = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("serve-worker") {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        if let Some(list) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        {
            cpus.push(list.trim().to_string());
        }
    }
    cpus
}

/// Serves 4 KiB GETs to a client pinned to the last CPU this process may
/// use until a worker runs on that CPU only or 3 s have passed; what the
/// workers may run on then.
fn serve_a_pinned_client(follow_clients: bool) -> Option<(usize, Vec<String>)> {
    let allowed = rustix::thread::sched_getaffinity(None).unwrap();
    let cpus: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&cpu| allowed.is_set(cpu))
        .collect();
    if cpus.len() < 2 {
        eprintln!("skipped: this process may run on one CPU only");
        return None;
    }
    let last = *cpus.last().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), vec![5u8; 4096]).unwrap();
    let mut config = ServeConfig::new(root.path().to_path_buf());
    config.workers = cpus.len();
    config.follow_clients = follow_clients;
    let handle = Server::bind(config).unwrap().spawn().unwrap();
    let address = handle.local_addr();
    let wanted = last.to_string();
    let seen = std::thread::spawn(move || {
        let mut one = rustix::thread::CpuSet::new();
        one.set(last);
        rustix::thread::sched_setaffinity(None, &one).unwrap();
        let mut client = RawClient::connect(address);
        let started = std::time::Instant::now();
        loop {
            assert_eq!(client.get("/f", "").status, 200);
            let seen = workers_cpus();
            if seen.contains(&wanted) || started.elapsed() > Duration::from_secs(3) {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
    .join()
    .unwrap();
    handle.shutdown();
    handle.wait();
    Some((last, seen))
}

#[test]
fn a_worker_runs_on_the_cpu_its_clients_packets_arrive_on() {
    let _alone = ONE_SERVER.lock().unwrap_or_else(|p| p.into_inner());
    let Some((cpu, seen)) = serve_a_pinned_client(true) else {
        return;
    };
    assert!(
        seen.contains(&cpu.to_string()),
        "no worker pinned to CPU {cpu}: {seen:?}"
    );
    assert_eq!(
        seen.iter().filter(|cpus| **cpus == cpu.to_string()).count(),
        1,
        "only the worker serving the client follows it: {seen:?}"
    );
}

#[test]
fn without_following_the_workers_float() {
    let _alone = ONE_SERVER.lock().unwrap_or_else(|p| p.into_inner());
    let Some((cpu, seen)) = serve_a_pinned_client(false) else {
        return;
    };
    assert!(
        !seen.contains(&cpu.to_string()),
        "a worker pinned to CPU {cpu} though not following: {seen:?}"
    );
}
