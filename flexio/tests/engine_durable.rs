//! Durable flows (`fsync`): the sink is written back slice by slice while
//! the flow runs (sync_file_range), so every mechanism must move the bytes
//! of a flow cut into 8 MiB pieces exactly as it moves them whole.

use crate::common;

use std::fs;

use common::*;
use flexio::{EndpointKind, Flow, MechanismName, Params, Sink, Source};

#[test]
fn every_file_to_file_mechanism_survives_slicing_for_writeback() {
    let dir = scratch_dir();
    let length = 3 * 8 * MIB + 4097;
    let content = data(length + 12345, 91);
    let source = dir.path().join("source");
    write_file(&source, content);
    let mut failures = Vec::new();
    for mechanism in MechanismName::serving(EndpointKind::File, EndpointKind::File) {
        for chunk in [64 * KIB, 3 * MIB + 1] {
            let sink = dir.path().join(format!("sink-{mechanism}-{chunk}"));
            let result = Flow::new(Source::path(&source), Sink::path(&sink))
                .via(mechanism)
                .params(Params {
                    chunk,
                    ..Params::default()
                })
                .offset(12345)
                .length(length as u64)
                .fsync(true)
                .run();
            let case = format!("{mechanism} chunk {chunk}");
            match result {
                Ok(report) => {
                    if let Err(why) = check_report(&report, mechanism, length as u64) {
                        failures.push(format!("{case}: {why}"));
                    }
                    if let Err(why) =
                        check_bytes(&case, &fs::read(&sink).unwrap(), &content[12345..])
                    {
                        failures.push(why);
                    }
                }
                Err(error) => failures.push(format!("{case}: {error}")),
            }
        }
    }
    assert!(leftover_temp_files(dir.path()).is_empty());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
