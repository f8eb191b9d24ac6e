//! Cue's figures (the in-kernel streaming note of ~1995, a DECstation
//! 3100 sending 12 MB files to the network in 8 KB blocks), printed beside
//! ours by the scenarios that repeat its experiments. Transcribed from
//! the source document's tables; "user driven" is its read/write loop.

/// Table 1 (set 1, k=3, t=70 ms): context switches per MB.
pub const TABLE_1: &str = "\
Cue, Table 1 (k=3, t=70 ms): context switches per MB, five runs
  user driven: voluntary 6 6 5 19 8, involuntary 23 23 23 18 22
  Cue:         48 47 47 50 49 (all voluntary)";

/// Tables 3–5 (sets 1–4): the schedules' time, system time, context
/// switches per MB and the metering process's calls per second (solo:
/// about 32 000/s).
pub const TABLES_3_TO_5: &str = "\
Cue, Tables 3-5 (sets 1-4; metering process solo ~32 000 calls/s)
  schedule          wall s/MB  system s/MB  switches/MB  meter calls/s  (÷ 32 000)
  user driven            4.53         2.25          301          12471  (39%)
  Cue k=3 t=70 ms        5.27         2.13           48          14775  (46%)
  Cue k=4 t=70 ms        4.60         2.17           39          13017  (41%)
  Cue k=1 t=16 ms        3.85         1.75          132           9890  (31%)
  Cue k=1 t=20 ms        4.34         1.75          131          10422  (33%)";

/// Tables 6–7 (sets 5–9): parallel transfers, time per MB.
pub const TABLES_6_AND_7: &str = "\
Cue, Tables 6-7: parallel transfers (k=4, t=16 ms), seconds per MB of each transfer
  transfers   Cue   user driven
          2  3.13          7.40
          3  3.42         13.32
          4  3.23         18.97
  Table 6 (two transfers): user driven 4.05 s/MB wall, 1.00 system, 59.6 switches/MB;
  Cue k=4 t=16: 3.17 wall, 0.89 system, 97.2 switches/MB";

/// Table 8: wuftpd serving 1–4 clients, KB/s at each client.
pub const TABLE_8: &str = "\
Cue, Table 8: wuftpd, KB/s at each client
  clients  user driven  Cue k=1,t=16  k=3,t=16  k=4,t=16  k=4,t=70
        1      400-410       260-280   340-360   350-370       200
        2      220-300       220-240   240-280   320-360       350
        3      202-240       239-257   221-250   277-330       300
        4      205-240       216-237   204-225   300-360       317";

/// Cue's tables beside the product scenario at `place`: Table 1 and
/// Tables 3-5 beside the meter and the schedule grid, Tables 6-7 beside
/// the parallel transfers, Table 8 beside the server's clients.
///
/// # Examples
/// ```
/// use flexio_bench::originals::Beside;
/// assert_eq!(flexio_seeds::cue::beside(Beside::Parallel), [flexio_seeds::cue::TABLES_6_AND_7]);
/// ```
pub fn beside(place: flexio_bench::originals::Beside) -> Vec<&'static str> {
    use flexio_bench::originals::Beside;
    match place {
        Beside::Meter | Beside::Schedule => vec![TABLE_1, TABLES_3_TO_5],
        Beside::Parallel => vec![TABLES_6_AND_7],
        Beside::ServeClients => vec![TABLE_8],
    }
}
