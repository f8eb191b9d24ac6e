//! docs/bench.md's grades table is the one a run wrote: every exhibit of
//! the catalogue once, in its order, each grade one the rule gives, and
//! the count line agreeing with the rows (a hand edit of one row or of
//! the counts shows here).

use flexio_seeds::seeds::catalogue;

#[test]
fn the_docs_grades_table_is_a_runs_whole_table() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/bench.md")).unwrap();
    let start = docs
        .find("20 exhibits: ")
        .expect("the grades table in docs/bench.md");
    let table = &docs[start..];
    let counts = table.lines().next().unwrap();
    let rows: Vec<(&str, &str)> = table
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with("| exhibit |"))
        .skip(2)
        .take_while(|l| l.starts_with("| "))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            (cells[0].trim_start_matches("| "), cells[2])
        })
        .collect();
    let ids: Vec<&str> = rows.iter().map(|(id, _)| *id).collect();
    let catalogue_ids: Vec<&str> = catalogue().iter().map(|e| e.id).collect();
    assert_eq!(ids, catalogue_ids);
    let count = |grade: &str| rows.iter().filter(|(_, g)| *g == grade).count();
    for (_, grade) in &rows {
        assert!(
            ["FULL", "PARTIAL", "CEILING", "NONE"].contains(grade),
            "{grade}"
        );
    }
    let said = format!(
        "20 exhibits: {} FULL, {} PARTIAL, {} CEILING, {} NONE.",
        count("FULL"),
        count("PARTIAL"),
        count("CEILING"),
        count("NONE")
    );
    assert_eq!(counts, said);
}
