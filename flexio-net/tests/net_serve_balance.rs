//! How `serve`'s workers share the connections: clients that connect
//! together spread over the workers, so no worker's thread carries most
//! of them while others idle (at 64 wrk connections, one worker of eight
//! held 33 and three held none: the 4 KiB p99 tail against nginx).

mod common;

use std::time::Duration;

use common::RawClient;
use flexio_net::server::{ServeConfig, Server};

#[test]
fn connections_opened_together_spread_over_the_workers() {
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
