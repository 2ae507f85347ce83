//! `flysim brain import` of the formats users have: a dense adjacency matrix with a neuron
//! table of transmitters, and a whitespace edge list with a list of inhibitory neurons (the
//! committed tables of `fixtures/connectome-tables`), and the Shiu et al. connectivity table as
//! Parquet, end to end; refusals name file, line and column.

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

/// A small `Connectivity_783.parquet`: the rows of [`CONNECTIVITY_CSV`] written by the `parquet`
/// crate's own writer (INT64 columns, uncompressed, no dictionary or statistics), as hex. The
/// brain's suite writes its Parquet tables itself; this binary's suite has no Parquet writer.
const CONNECTIVITY_PARQUET: &[&str] = &[
    "504152311500154015402c150815001506150600001eee270d0000000a0aee270d0000000a14ee270d000000",
    "0a1eee270d0000000a1500154015402c150815001506150600000aee270d0000000a14ee270d0000000a1eee",
    "270d0000000a0aee270d0000000a1500154015402c150815001506150600000c00000000000000fdffffffff",
    "ffffff01000000000000000200000000000000191c1608156216000000191c166a156216000000191c16cc01",
    "1562160000001502194c4806736368656d6115060015042500180e50726573796e61707469635f4944001504",
    "2500180f506f737473796e61707469635f494400150425001819457863697461746f7279207820436f6e6e65",
    "63746976697479001608191c193c26001c150419150019180e50726573796e61707469635f49441500160816",
    "6216622608491c150015001502000016ae0215140026001c150419150019180f506f737473796e6170746963",
    "5f49441500160816621662266a491c150015001502000016c20215140026001c150419150019181945786369",
    "7461746f7279207820436f6e6e6563746976697479150016081662166226cc01491c150015001502000016d6",
    "0215160016a6021608260816a602140000280c666c7973696d207465737473193c1c00001c00001c0000002d",
    "01000050415231",
];

const CONNECTIVITY_CSV: &str = "Presynaptic_ID,Postsynaptic_ID,Excitatory x Connectivity
720575940600000030,720575940600000010,12
720575940600000010,720575940600000020,-3
720575940600000020,720575940600000030,1
720575940600000030,720575940600000010,2
";

const COMPLETENESS_CSV: &str =
    ",Completed\n720575940600000030,True\n720575940600000010,False\n720575940600000020,True\n";

/// The words of a rendered diagnostic, its wrapping and margin undone.
fn words(stderr: &str) -> String {
    stderr
        .split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

fn unhex(lines: &[&str]) -> Vec<u8> {
    let hex: String = lines.concat();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// `brain import --from flywire` of the Completeness table and `connectivity`, into `out`.
fn import_flywire(completeness: &str, connectivity: &str, out: &str) -> crate::Run {
    flysim(
        &[
            "brain",
            "import",
            "--from",
            "flywire",
            "--completeness",
            completeness,
            "--connectivity",
            connectivity,
            "-o",
            out,
        ],
        b"",
    )
}

#[test]
fn a_parquet_connectivity_table_is_read_or_refused_with_the_build_line() {
    let dir = scratch("cli-brain-import-parquet");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    std::fs::write(path("Completeness_783.csv"), COMPLETENESS_CSV).unwrap();
    std::fs::write(path("Connectivity_783.csv"), CONNECTIVITY_CSV).unwrap();
    std::fs::write(
        path("Connectivity_783.parquet"),
        unhex(CONNECTIVITY_PARQUET),
    )
    .unwrap();
    let csv = import_flywire(
        &path("Completeness_783.csv"),
        &path("Connectivity_783.csv"),
        &path("csv.flycsr"),
    );
    assert_eq!(csv.status, 0, "{}", csv.stderr);
    assert!(
        csv.stdout
            .contains("neurons     3\nedges       3\nsynapses    18\ninhibitory  1 edges\n"),
        "{}",
        csv.stdout
    );
    let run = import_flywire(
        &path("Completeness_783.csv"),
        &path("Connectivity_783.parquet"),
        &path("parquet.flycsr"),
    );
    if run.status == 0 {
        // This build reads Parquet (its feature `parquet`, or flysim-brain's turned on by a
        // workspace build of the tests): the same connectome, digest and all.
        let summary = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
        assert_eq!(summary(&run.stdout), summary(&csv.stdout));
        assert_eq!(
            std::fs::read(path("parquet.flycsr")).unwrap(),
            std::fs::read(path("csv.flycsr")).unwrap()
        );
    } else if cfg!(feature = "parquet") {
        panic!(
            "a build with the feature refused the table:\n{}",
            run.stderr
        );
    } else {
        assert_eq!(codes_in(&run.stderr), ["FS0712"], "{}", run.stderr);
        let words = words(&run.stderr);
        assert!(
            words.contains("Connectivity_783.parquet is a Parquet file")
                && words.contains("`cargo install --path crates/cli --features parquet`"),
            "{}",
            run.stderr
        );
        assert!(!dir.join("parquet.flycsr").exists());
    }
    // Only the flywire connectivity table is read as Parquet.
    let edges = flysim(
        &[
            "brain",
            "import",
            "--from",
            "edges",
            "--edges",
            &path("Connectivity_783.parquet"),
            "-o",
            &path("edges.flycsr"),
        ],
        b"",
    );
    assert_eq!(codes_in(&edges.stderr), ["FS0710"], "{}", edges.stderr);
    assert!(
        words(&edges.stderr).contains("the file is Parquet; only the connectivity table"),
        "{}",
        edges.stderr
    );
}
