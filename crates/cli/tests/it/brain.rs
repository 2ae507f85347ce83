//! `flysim brain`: import, info, check and generate, end to end.

use crate::{codes_in, flysim, root};

/// A scratch directory under the target directory, emptied.
pub(crate) fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn import_an_edge_list_then_describe_it() {
    let dir = scratch("cli-brain-import");
    let out = dir.join("worm.flycsr");
    let out_s = out.to_str().unwrap();
    let run = flysim(
        &[
            "brain",
            "import",
            "--from",
            "edges",
            "--edges",
            "-",
            "--meta",
            "licence=MIT",
            "-o",
            out_s,
        ],
        b"pre,post,weight,type\nAVAL,AVAR,3,chemical\nAVAR,AVAL,-2,chemical\n",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("neurons     2\nedges       2\n"),
        "{}",
        run.stdout
    );
    let info = flysim(&["brain", "info", out_s], b"");
    assert_eq!(info.status, 0, "{}", info.stderr);
    assert!(
        info.stdout.contains("meta        licence = MIT"),
        "{}",
        info.stdout
    );
    assert!(info.stdout.contains("meta        importer = edges"));
    assert!(info.stdout.contains("inhibitory  1 edges"));
    let digest = flysim_types::digest::sha256(&std::fs::read(&out).unwrap());
    assert!(
        info.stdout
            .contains(&format!("digest      sha256:{digest}"))
    );
}

#[test]
fn import_codex_and_flywire_from_files() {
    let dir = scratch("cli-brain-codex");
    let conn = dir.join("connections.csv");
    std::fs::write(
        &conn,
        "pre_root_id,post_root_id,neuropil,syn_count,nt_type\n11,12,AL_L,7,GABA\n12,11,AL_L,5,ACH\n",
    )
    .unwrap();
    let out = dir.join("codex.flycsr");
    let run = flysim(
        &[
            "brain",
            "import",
            "--from",
            "codex",
            "--connections",
            conn.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("inhibitory  1 edges"), "{}", run.stdout);
    let comp = dir.join("Completeness_783.csv");
    std::fs::write(&comp, ",Completed\n12,True\n11,True\n").unwrap();
    let conn = dir.join("Connectivity_783.csv");
    std::fs::write(
        &conn,
        "Presynaptic_ID,Postsynaptic_ID,Excitatory x Connectivity\n12,11,-4\n",
    )
    .unwrap();
    let run = flysim(
        &[
            "brain",
            "import",
            "--from",
            "flywire",
            "--completeness",
            comp.to_str().unwrap(),
            "--connectivity",
            conn.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("edges       1\n"), "{}", run.stdout);
    // A missing table for the chosen source is a usage error.
    let run = flysim(&["brain", "import", "--from", "flywire", "-o", "x"], b"");
    assert_eq!(run.status, 2);
}

#[test]
fn refusals_carry_their_codes_and_exit_codes() {
    let run = flysim(&["brain", "info", "README.md"], b"");
    assert_eq!(
        (run.status, codes_in(&run.stderr)),
        (1, vec!["FS0701".to_owned()])
    );
    let run = flysim(&["brain", "info", "no/such/file.flycsr"], b"");
    assert_eq!(run.status, 3);
    let dir = scratch("cli-brain-refusals");
    let out = dir.join("x.flycsr");
    let run = flysim(
        &[
            "brain",
            "import",
            "--from",
            "edges",
            "--edges",
            "-",
            "-o",
            out.to_str().unwrap(),
        ],
        b"a,b,1\nb,c,x\n",
    );
    assert_eq!(codes_in(&run.stderr), ["FS0710"]);
    assert!(run.stderr.contains("<stdin>:2"), "{}", run.stderr);
    assert!(!out.exists(), "nothing is written on refusal");
}

#[test]
fn the_shipped_profiles_check_and_the_toys_regenerate() {
    for name in ["arena-toy-v1", "counter-toy-v1"] {
        let profile = format!("fixtures/profiles/{name}/{name}.json");
        let run = flysim(&["brain", "check", &profile], b"");
        assert_eq!(run.status, 0, "{}", run.stderr);
        assert!(run.stdout.contains(&format!("profile     {name}")));
        let dir = scratch(&format!("cli-brain-generate-{name}"));
        let run = flysim(
            &["brain", "generate", name, "--out", dir.to_str().unwrap()],
            b"",
        );
        assert_eq!(run.status, 0, "{}", run.stderr);
        for file in [format!("{name}.json"), format!("{name}.flycsr")] {
            assert_eq!(
                std::fs::read(dir.join(&file)).unwrap(),
                std::fs::read(root().join("fixtures/profiles").join(name).join(&file)).unwrap(),
                "{file}"
            );
        }
    }
    let info = flysim(
        &[
            "brain",
            "info",
            "fixtures/profiles/celegans-cook2019/celegans-cook2019.flycsr",
        ],
        b"",
    );
    assert_eq!(info.status, 0, "{}", info.stderr);
    assert!(
        info.stdout
            .contains("neurons     448\nedges       6625\nsynapses    39702\n")
    );
}
