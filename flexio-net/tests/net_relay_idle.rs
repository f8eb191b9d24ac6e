//! A chain link (`get --serve`) and downstreams that hold connections
//! without asking for anything (issue 39): 70 idle connections filled its
//! cap and an honest downstream got 503; one opened every half second
//! held the link open for ever. Idle connections make way at the cap and
//! do not keep the link from ending.

use crate::common;

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{pattern, serve, RawClient};
use flexio_net::client::{GetOptions, Relay};

#[test]
fn idle_downstreams_neither_fill_the_cap_nor_hold_the_link_open() {
    let upstream_dir = tempfile::tempdir().unwrap();
    let data = pattern(1 << 20, 12);
    std::fs::write(upstream_dir.path().join("f"), &data).unwrap();
    let upstream = serve(upstream_dir.path());
    let relay = Relay::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    let address = relay.local_addr().unwrap();
    let dest = tempfile::tempdir().unwrap();
    let destination = dest.path().join("f");
    let (ended, end) = mpsc::channel();
    let linger = Duration::from_secs(1);
    std::thread::spawn(move || {
        let result = relay.fetch_and_serve(
            &[format!("http://{upstream}/f")],
            Some(&destination),
            &GetOptions::default(),
            linger,
        );
        let _ = ended.send(result.map(|report| report.bytes));
    });
    let idle: Vec<TcpStream> = (0..70)
        .map(|_| TcpStream::connect(address).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // A downstream that opens a connection every half second and never
    // asks for anything.
    let stop = Arc::new(AtomicBool::new(false));
    let pester = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for _ in 0..60 {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                if let Ok(stream) = TcpStream::connect(address) {
                    held.push(stream);
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        })
    };
    let mut honest = RawClient::connect(address);
    let response = honest.get("/f", "");
    assert_eq!(response.status, 200, "{}", response.text());
    assert!(response.body == data);
    drop(honest);
    // The link ends a linger after the last answer, whatever is idle.
    let result = end.recv_timeout(linger + Duration::from_secs(8));
    stop.store(true, Ordering::Release);
    pester.join().unwrap();
    drop(idle);
    match result {
        Ok(Ok(bytes)) => assert_eq!(bytes, 1 << 20),
        Ok(Err(error)) => panic!("the link failed: {error}"),
        Err(_) => panic!("idle connections held the link open"),
    }
    assert!(std::fs::read(dest.path().join("f")).unwrap() == data);
}
