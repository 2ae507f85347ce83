//! `flysim brain import` of the formats users have: a dense adjacency matrix with a neuron
//! table of transmitters, and a whitespace edge list with a list of inhibitory neurons (the
//! committed tables of `fixtures/connectome-tables`), end to end; refusals name file, line
//! and column.

use crate::brain::scratch;
use crate::{codes_in, flysim, root};

fn fixture(name: &str) -> String {
    root()
        .join("fixtures/connectome-tables")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

#[test]
fn import_a_matrix_signed_by_a_transmitter_table() {
    let dir = scratch("cli-brain-import-matrix");
    let out = dir.join("larva-like.flycsr");
    let out_s = out.to_str().unwrap();
    let run = flysim(
        &[
            "brain",
            "import",
            "--from",
            "matrix",
            "--matrix",
            &fixture("matrix.csv"),
            "--signs",
            &fixture("neurons.csv"),
            "-o",
            out_s,
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let info = flysim(&["brain", "info", out_s], b"");
    assert_eq!(info.status, 0, "{}", info.stderr);
    for line in [
        "neurons     4\n",
        "edges       4\n",
        "synapses    11\n",
        "inhibitory  2 edges\n",
        "meta        importer = matrix\n",
        "meta        inhibitory_neurons = 2\n",
    ] {
        assert!(info.stdout.contains(line), "{line:?} in\n{}", info.stdout);
    }
    // The same matrix without the table: every edge excitatory.
    let plain = flysim(
        &[
            "brain",
            "import",
            "--from",
            "matrix",
            "--matrix",
            &fixture("matrix.csv"),
            "-o",
            out_s,
        ],
        b"",
    );
    assert_eq!(plain.status, 0, "{}", plain.stderr);
    assert!(
        plain.stdout.contains("inhibitory  0 edges\n"),
        "{}",
        plain.stdout
    );
}

#[test]
fn import_a_whitespace_edge_list_with_an_inhibitory_list() {
    let dir = scratch("cli-brain-import-ws");
    let out = dir.join("ws.flycsr");
    let run = flysim(
        &[
            "brain",
            "import",
            "--from",
            "edges",
            "--edges",
            &fixture("edges.txt"),
            "--signs",
            &fixture("inhibitory.txt"),
            "-o",
            out.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("neurons     3\nedges       3\nsynapses    13\ninhibitory  1 edges\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_bad_matrix_cell_is_refused_with_file_line_and_column() {
    let dir = scratch("cli-brain-import-bad");
    let out = dir.join("never.flycsr");
    let run = flysim(
        &[
            "brain",
            "import",
            "--from",
            "matrix",
            "--matrix",
            "-",
            "-o",
            out.to_str().unwrap(),
        ],
        b",a,b\na,0,3\nb,two,0\n",
    );
    assert_ne!(run.status, 0);
    assert_eq!(codes_in(&run.stderr), ["FS0710"], "{}", run.stderr);
    assert!(
        run.stderr.contains(":3:3: count \"two\" is not an integer"),
        "{}",
        run.stderr
    );
    assert!(!out.exists());
    // A sign table naming an unknown transmitter: FS0710 at its cell.
    let signs = dir.join("nt.csv");
    std::fs::write(&signs, "id,nt\na,ACH\nb,dopamin\n").unwrap();
    let run = flysim(
        &[
            "brain",
            "import",
            "--from",
            "matrix",
            "--matrix",
            "-",
            "--signs",
            signs.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        b",a,b\na,0,3\nb,1,0\n",
    );
    assert_eq!(codes_in(&run.stderr), ["FS0710"], "{}", run.stderr);
    assert!(run.stderr.contains("nt.csv:3:3:"), "{}", run.stderr);
}
