use super::*;

#[test]
fn a_failed_ip_step_says_the_command_and_what_ip_said() {
    let error = ip(&["netns", "del", "flexio-no-such-namespace"]).unwrap_err();
    let Error::Command { command, why } = &error else {
        panic!("not a command error: {error:?}");
    };
    assert_eq!(command, "ip netns del flexio-no-such-namespace");
    assert!(!why.is_empty());
    assert!(error
        .to_string()
        .starts_with("ip netns del flexio-no-such-namespace: "));
}

#[test]
fn a_count_of_hosts_out_of_range_is_refused() {
    for n in [0, 201] {
        let error = Hosts::create(n).unwrap_err();
        assert!(matches!(error, Error::Refused { .. }), "{error:?}");
    }
}
