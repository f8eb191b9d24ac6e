//! The bench's failures are typed: each says what was being done, to which
//! program, path or peer, and why, and a caller can tell a skip-worthy
//! peer from bad options or a stop without reading the words.

use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use flexio_bench::cache_bench::Parts;
use flexio_bench::host_bench::servers::run_bounded;
use flexio_bench::hosts_bench::{self, HostsOptions};
use flexio_bench::Error;

#[test]
fn a_program_that_cannot_start_is_named_with_the_cause() {
    let error = run_bounded(
        Command::new("/no/such/flexio-bench-program"),
        Duration::from_secs(5),
    )
    .unwrap_err();
    match &error {
        Error::Spawn {
            operation,
            program,
            source,
        } => {
            assert_eq!(*operation, "start");
            assert_eq!(program, "/no/such/flexio-bench-program");
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("not a Spawn error: {other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("start /no/such/flexio-bench-program: "),
        "{error}"
    );
}

#[test]
fn a_program_past_its_limit_is_killed_and_named() {
    let mut command = Command::new("sleep");
    command.arg("30");
    let error = run_bounded(command, Duration::from_secs(1)).unwrap_err();
    assert!(
        matches!(&error, Error::Program { program, why } if program == "sleep" && why == "killed after 1 s"),
        "{error:?}"
    );
}

#[test]
fn bad_options_are_usage_errors() {
    let options = HostsOptions {
        dir: std::env::temp_dir().join("flexio-bench-errors-never-made"),
        flexio: "flexio".into(),
        counts: vec![2, 9],
        bytes: 1 << 20,
        rate: 1 << 20,
        runs: 1,
        stop: Arc::new(AtomicBool::new(false)),
    };
    let error = hosts_bench::run(&options).unwrap_err();
    assert!(matches!(error, Error::Usage(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "9 hosts: the hosts scenario takes 2 to 8"
    );
    let error = Parts::parse("hits,warp").unwrap_err();
    assert!(matches!(error, Error::Usage(_)), "{error:?}");
    assert!(error
        .to_string()
        .starts_with("unknown part \"warp\"; known: smack, hits"));
}
