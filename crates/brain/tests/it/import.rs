//! The importers on small files the tests write.

use std::collections::BTreeMap;
use std::path::PathBuf;

use flysim_brain::import::{self, Table};

/// Writes `text` to a fresh file under the target directory and reads it back.
fn written(name: &str, text: &str) -> (PathBuf, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("brain-import");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let back = std::fs::read_to_string(&path).unwrap();
    (path, back)
}

fn meta() -> BTreeMap<String, String> {
    BTreeMap::from([("dataset".to_owned(), "test".to_owned())])
}

#[test]
fn edge_list_with_header_names_and_symmetric_gap_junctions() {
    let (_, text) = written(
        "edges.csv",
        "Source,Target,Weight,Type\nAVAL , AVAR ,3,chemical\nAVAR,AVAL,2,chemical\nAVAL,AVBL,5,electrical\nAVAL,AVAR,1,chemical\n",
    );
    let t = Table {
        name: "edges.csv",
        text: &text,
    };
    let c = import::edges(&t, &["electrical".to_owned()], &meta()).unwrap();
    assert_eq!(c.names().unwrap(), ["AVAL", "AVAR", "AVBL"]);
    assert_eq!(c.indptr(), [0, 2, 3, 4]);
    assert_eq!(c.targets(), [1, 2, 0, 0]);
    assert_eq!(c.weights(), [4, 5, 2, 5]);
    assert_eq!(c.meta()["importer"], "edges");
    // Without the symmetric type the gap junction is one edge.
    let c = import::edges(&t, &[], &meta()).unwrap();
    assert_eq!(c.edges(), 3);
}

#[test]
fn edge_list_tab_separated_numeric_ids_sort_numerically() {
    let (_, text) = written("edges.tsv", "10\t2\t-4\n2\t10\t1\n9\t10\t6\n");
    let c = import::edges(
        &Table {
            name: "edges.tsv",
            text: &text,
        },
        &[],
        &meta(),
    )
    .unwrap();
    assert_eq!(c.names().unwrap(), ["2", "9", "10"]);
    assert_eq!(c.weights(), [1, 6, -4]);
}

#[test]
fn edge_list_refusals() {
    let check = |text: &str, code: &str, line: u64| {
        let err = import::edges(
            &Table {
                name: "e.csv",
                text,
            },
            &[],
            &meta(),
        )
        .unwrap_err();
        assert_eq!(err.code_str(), code, "{text:?}: {err}");
        match err {
            flysim_brain::BrainError::ImportSyntax { line: l, .. }
            | flysim_brain::BrainError::ImportInconsistent { line: l, .. } => assert_eq!(l, line),
            other => panic!("{other}"),
        }
    };
    check("a,b,1\nb,c,x\n", "FS0710", 2);
    check("a,b\n", "FS0710", 1);
    check("a,b,1\nb,c,1.5\n", "FS0710", 2);
    check("a,\"b,1\n", "FS0710", 1);
    check("a,b,40000\n", "FS0711", 0);
    check("pre,post,weight\n", "FS0711", 0);
}

#[test]
fn codex_sums_pairs_signs_by_transmitter_and_follows_the_classification() {
    let (_, conn) = written(
        "connections.csv",
        "pre_root_id,post_root_id,neuropil,syn_count,nt_type\n\
         720575940600000003,720575940600000001,AL_L,6,GABA\n\
         720575940600000003,720575940600000001,AL_R,4,GABA\n\
         720575940600000001,720575940600000002,MB_CA_L,8,ACH\n\
         720575940600000002,720575940600000003,LH_R,5,DA\n\
         720575940600000002,720575940600000003,LH_L,5,GLUT\n",
    );
    let (_, class) = written(
        "classification.csv",
        "root_id,flow,super_class\n720575940600000009,intrinsic,central\n720575940600000001,intrinsic,central\n720575940600000002,intrinsic,central\n720575940600000003,intrinsic,central\n",
    );
    let c = import::codex(
        &Table {
            name: "connections.csv",
            text: &conn,
        },
        Some(&Table {
            name: "classification.csv",
            text: &class,
        }),
        &meta(),
    )
    .unwrap();
    assert_eq!(c.neurons(), 4, "the classification fixes the neuron set");
    assert_eq!(c.names().unwrap()[3], "720575940600000009");
    // 1 -> 2: +8 (ACH); 2 -> 3: rows disagree (DA +, GLUT -): +10; 3 -> 1: GABA: -10.
    assert_eq!(c.indptr(), [0, 1, 2, 3, 3]);
    assert_eq!(c.targets(), [1, 2, 0]);
    assert_eq!(c.weights(), [8, 10, -10]);
    let alone = import::codex(
        &Table {
            name: "connections.csv",
            text: &conn,
        },
        None,
        &meta(),
    )
    .unwrap();
    assert_eq!(alone.neurons(), 3);
    let (_, partial) = written("class2.csv", "root_id\n720575940600000001\n");
    let err = import::codex(
        &Table {
            name: "connections.csv",
            text: &conn,
        },
        Some(&Table {
            name: "class2.csv",
            text: &partial,
        }),
        &meta(),
    )
    .unwrap_err();
    assert_eq!(err.code_str(), "FS0711");
    let err = import::codex(
        &Table {
            name: "c.csv",
            text: "pre,post\n1,2\n",
        },
        None,
        &meta(),
    )
    .unwrap_err();
    assert_eq!(err.code_str(), "FS0710");
}

#[test]
fn flywire_follows_the_completeness_order_and_checks_the_index_columns() {
    let (_, comp) = written(
        "Completeness_783.csv",
        ",Completed\n720575940600000030,True\n720575940600000010,False\n720575940600000020,True\n",
    );
    let (_, conn) = written(
        "Connectivity_783.csv",
        "Presynaptic_ID,Postsynaptic_ID,Presynaptic_Index,Postsynaptic_Index,Connectivity,Excitatory,Excitatory x Connectivity\n\
         720575940600000030,720575940600000010,0,1,12,1,12\n\
         720575940600000010,720575940600000020,1,2,3,-1,-3\n\
         720575940600000020,720575940600000030,2,0,1,1,1\n",
    );
    let ct = Table {
        name: "Completeness_783.csv",
        text: &comp,
    };
    let c = import::flywire(
        &ct,
        &Table {
            name: "Connectivity_783.csv",
            text: &conn,
        },
        &meta(),
    )
    .unwrap();
    assert_eq!(
        c.names().unwrap(),
        [
            "720575940600000030",
            "720575940600000010",
            "720575940600000020"
        ]
    );
    assert_eq!(c.indptr(), [0, 1, 2, 3]);
    assert_eq!(c.targets(), [1, 2, 0]);
    assert_eq!(c.weights(), [12, -3, 1]);
    // The product column may be absent when Connectivity and Excitatory are there.
    let (_, plain) = written(
        "conn-plain.csv",
        "Presynaptic_ID,Postsynaptic_ID,Connectivity,Excitatory\n720575940600000030,720575940600000010,12,-1\n",
    );
    let c = import::flywire(
        &ct,
        &Table {
            name: "conn-plain.csv",
            text: &plain,
        },
        &meta(),
    )
    .unwrap();
    assert_eq!(c.weights(), [-12]);
    let (_, wrong_index) = written(
        "conn-index.csv",
        "Presynaptic_ID,Postsynaptic_ID,Presynaptic_Index,Postsynaptic_Index,Excitatory x Connectivity\n720575940600000030,720575940600000010,1,1,12\n",
    );
    let err = import::flywire(
        &ct,
        &Table {
            name: "conn-index.csv",
            text: &wrong_index,
        },
        &meta(),
    )
    .unwrap_err();
    assert_eq!(err.code_str(), "FS0711");
    let (_, unknown) = written(
        "conn-unknown.csv",
        "Presynaptic_ID,Postsynaptic_ID,Excitatory x Connectivity\n720575940600000099,720575940600000010,1\n",
    );
    let err = import::flywire(
        &ct,
        &Table {
            name: "conn-unknown.csv",
            text: &unknown,
        },
        &meta(),
    )
    .unwrap_err();
    assert_eq!(err.code_str(), "FS0711");
    let err = import::flywire(
        &ct,
        &Table {
            name: "x.csv",
            text: "Presynaptic_ID,Postsynaptic_ID\n",
        },
        &meta(),
    )
    .unwrap_err();
    assert_eq!(err.code_str(), "FS0710");
}
