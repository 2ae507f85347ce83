//! The matrix importer, whitespace edge lists and sign tables, on the committed small tables of
//! `fixtures/connectome-tables` and on refusals that must name their line and column.

use std::collections::BTreeMap;

use flysim_brain::BrainError;
use flysim_brain::import::{self, Table};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(crate::root().join("fixtures/connectome-tables").join(name)).unwrap()
}

fn meta() -> BTreeMap<String, String> {
    BTreeMap::from([("dataset".to_owned(), "test".to_owned())])
}

fn table<'a>(name: &'a str, text: &'a str) -> Table<'a> {
    Table { name, text }
}

/// The code, line and column of a refusal.
fn place(err: &BrainError) -> (String, u64, u64) {
    match err {
        BrainError::ImportSyntax { line, column, .. }
        | BrainError::ImportInconsistent { line, column, .. } => (err.code_str(), *line, *column),
        other => panic!("not an import refusal: {other}"),
    }
}

#[test]
fn a_matrix_with_a_transmitter_table_gives_the_expected_signed_edges() {
    let m = fixture("matrix.csv");
    let c = import::matrix(&table("matrix.csv", &m), &meta()).unwrap();
    // The header order is the index; the rows came 101, 303, 202, 404.
    assert_eq!(c.names().unwrap(), ["101", "202", "303", "404"]);
    assert_eq!(c.indptr(), [0, 2, 3, 4, 4]);
    assert_eq!(c.targets(), [1, 3, 2, 0]);
    assert_eq!(c.weights(), [3, 1, 5, 2]);
    assert_eq!(c.meta()["importer"], "matrix");
    let n = fixture("neurons.csv");
    let signs = import::signs(&table("neurons.csv", &n)).unwrap();
    assert_eq!(signs.inhibitory(), 2, "GABA and Glut");
    let signed = import::apply_signs(&c, &signs).unwrap();
    assert_eq!(signed.indptr(), [0, 2, 3, 4, 4]);
    assert_eq!(signed.targets(), [1, 3, 2, 0]);
    // 202 (GABA) -> 303 and 303 (Glut) -> 101 are inhibitory; 101 (ACh) stays excitatory.
    assert_eq!(signed.weights(), [3, 1, -5, -2]);
    assert_eq!(signed.meta()["inhibitory_neurons"], "2");
    assert_eq!(signed.meta()["importer"], "matrix");
}

#[test]
fn a_whitespace_edge_list_with_an_inhibitory_list() {
    let e = fixture("edges.txt");
    let c = import::edges(&table("edges.txt", &e), &[], &meta()).unwrap();
    assert_eq!(c.names().unwrap(), ["10", "20", "30"]);
    assert_eq!(c.targets(), [1, 2, 0]);
    assert_eq!(c.weights(), [4, 2, 7]);
    let i = fixture("inhibitory.txt");
    let signs = import::signs(&table("inhibitory.txt", &i)).unwrap();
    let signed = import::apply_signs(&c, &signs).unwrap();
    assert_eq!(signed.weights(), [4, -2, 7]);
}

#[test]
fn matrices_without_a_corner_cell_and_signed_by_a_sign_column() {
    // R's write.table shape: the header has no corner cell; whitespace separated.
    let c = import::matrix(&table("m.txt", "a b\na 0 -2\nb 7 0\n"), &meta()).unwrap();
    assert_eq!(c.names().unwrap(), ["a", "b"]);
    assert_eq!(c.weights(), [-2, 7]);
    let unsigned = import::matrix(&table("m.tsv", "\ta\tb\na\t0\t2\nb\t7\t0\n"), &meta()).unwrap();
    let signs = import::signs(&table("s.csv", "id,sign\na,-1\nb,+1\n")).unwrap();
    assert_eq!(
        import::apply_signs(&unsigned, &signs).unwrap().weights(),
        [-2, 7]
    );
    let signs = import::signs(&table("s.csv", "id,inhibitory\na,no\nb,yes\n")).unwrap();
    assert_eq!(
        import::apply_signs(&unsigned, &signs).unwrap().weights(),
        [2, -7]
    );
}

#[test]
fn matrix_refusals_name_line_and_column() {
    let check = |text: &str, expected: (&str, u64, u64)| {
        let err = import::matrix(&table("m.csv", text), &meta()).unwrap_err();
        assert_eq!(
            place(&err),
            (expected.0.to_owned(), expected.1, expected.2),
            "{text:?}: {err}"
        );
    };
    check(",a,b\na,0,x\nb,0,0\n", ("FS0710", 2, 5));
    check(",a,b\na,0,1.5\nb,0,0\n", ("FS0710", 2, 5));
    check(",a,b\na,0\nb,0,0\n", ("FS0710", 2, 1));
    check(",a,a\na,0,0\n", ("FS0711", 1, 4));
    check(",a,\na,0,0\n", ("FS0710", 1, 4));
    check(",a,b\na,0,1\nc,0,0\n", ("FS0711", 3, 1));
    check(",a,b\na,0,1\na,0,0\n", ("FS0711", 3, 1));
    check(",a,b\na,0,1\n", ("FS0711", 1, 4));
    check(",a,b\n", ("FS0711", 1, 0));
    check(",a,b\na,0,40000\nb,0,0\n", ("FS0711", 0, 0));
    let err = import::matrix(&table("m.csv", ",a,b\na,0,x\nb,0,0\n"), &meta()).unwrap_err();
    assert_eq!(err.to_string(), "m.csv:2:5: count \"x\" is not an integer");
}

#[test]
fn sign_table_refusals_name_line_and_column() {
    let check = |text: &str, expected: (&str, u64, u64)| {
        let err = import::signs(&table("s.csv", text)).unwrap_err();
        assert_eq!(
            place(&err),
            (expected.0.to_owned(), expected.1, expected.2),
            "{text:?}: {err}"
        );
    };
    check("id,nt_type\n1,ACH\n2,GABBA\n", ("FS0710", 3, 3));
    check("id,sign\n1,2\n", ("FS0710", 2, 3));
    check("id,cell_type\n1,KC\n", ("FS0710", 1, 1));
    check("id,sign\n1,1\n1,-1\n", ("FS0711", 3, 1));
    check("id,sign\n1\n", ("FS0710", 2, 2));
    check("id,sign\n", ("FS0711", 0, 0));
    let c = import::edges(&table("e.txt", "1 2 3\n2 3 4\n"), &[], &meta()).unwrap();
    // A full table must sign every neuron that has outgoing edges.
    let partial = import::signs(&table("s.csv", "id,sign\n1,1\n")).unwrap();
    let err = import::apply_signs(&c, &partial).unwrap_err();
    assert_eq!(place(&err), ("FS0711".to_owned(), 0, 0), "{err}");
    // A listed inhibitory neuron that is not in the connectome is a typo, refused where it is.
    let list = import::signs(&table("i.txt", "neuron\n2\n7\n")).unwrap();
    let err = import::apply_signs(&c, &list).unwrap_err();
    assert_eq!(place(&err), ("FS0711".to_owned(), 3, 1), "{err}");
    // The weights must be unsigned counts when a table gives the signs.
    let signed = import::edges(&table("e.txt", "1 2 -3\n"), &[], &meta()).unwrap();
    let all = import::signs(&table("s.csv", "id,sign\n1,1\n2,1\n")).unwrap();
    assert_eq!(
        place(&import::apply_signs(&signed, &all).unwrap_err()).0,
        "FS0711"
    );
}

#[test]
fn edge_list_refusals_name_their_column() {
    let check = |text: &str, expected: (&str, u64, u64)| {
        let err = import::edges(&table("e.csv", text), &[], &meta()).unwrap_err();
        assert_eq!(
            place(&err),
            (expected.0.to_owned(), expected.1, expected.2),
            "{text:?}: {err}"
        );
    };
    check("a,b,1\nb,c,x\n", ("FS0710", 2, 5));
    check("a b 1\nb  c   x\n", ("FS0710", 2, 8));
    check("a,b,1\n ,c,1\n", ("FS0710", 2, 1));
    check("a,b,1\nb,\"c,1\n", ("FS0710", 2, 3));
    check("a b\n", ("FS0710", 1, 1));
}
