//! The shipped profiles: regenerated or re-imported byte for byte; the profile schema; profile
//! refusals.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_brain::import::{self, Table};
use flysim_brain::profile::{self, Profile};
use flysim_brain::{Brain, format, generate};

use crate::{root, toy};

#[test]
fn arena_toy_v1_regenerates_byte_for_byte() {
    let dir = root().join("fixtures/profiles/arena-toy-v1");
    let (c, p) = generate::arena_toy_v1();
    assert_eq!(
        std::fs::read_to_string(dir.join("arena-toy-v1.json")).unwrap(),
        p.to_canonical(),
        "regenerate with `flysim brain generate arena-toy-v1 --out fixtures/profiles/arena-toy-v1`"
    );
    assert_eq!(
        std::fs::read(dir.join(&p.connectome.file)).unwrap(),
        format::encode(&c)
    );
    Profile::parse(p.to_canonical().as_bytes())
        .unwrap()
        .check_against(&c)
        .unwrap();
}

#[test]
fn screen_toy_v1_regenerates_byte_for_byte_and_reads_the_band() {
    let dir = root().join("fixtures/profiles/screen-toy-v1");
    let (c, p) = generate::screen_toy_v1();
    assert_eq!(
        std::fs::read_to_string(dir.join("screen-toy-v1.json")).unwrap(),
        p.to_canonical(),
        "regenerate with `flysim brain generate screen-toy-v1 --out fixtures/profiles/screen-toy-v1`"
    );
    assert_eq!(
        std::fs::read(dir.join(&p.connectome.file)).unwrap(),
        format::encode(&c)
    );
    Profile::parse(p.to_canonical().as_bytes())
        .unwrap()
        .check_against(&c)
        .unwrap();
    assert!(dir.join("README.md").exists());
    assert_eq!((p.retina.width, p.retina.height), generate::SCREEN_SIZE);
    // Every column lies in the band of lines 0..16 the program paints.
    assert!(p.retina.columns().all(|(_, [_, x, y])| *x < 640 && *y < 16));
    assert_eq!(p.retina.column_count(), 32);
}

#[test]
fn counter_toy_v1_regenerates_byte_for_byte() {
    let dir = root().join("fixtures/profiles/counter-toy-v1");
    let (c, p) = generate::counter_toy_v1();
    assert_eq!(
        std::fs::read_to_string(dir.join("counter-toy-v1.json")).unwrap(),
        p.to_canonical(),
        "regenerate with `flysim brain generate counter-toy-v1 --out fixtures/profiles/counter-toy-v1`"
    );
    assert_eq!(
        std::fs::read(dir.join(&p.connectome.file)).unwrap(),
        format::encode(&c)
    );
    let parsed = Profile::parse(p.to_canonical().as_bytes()).unwrap();
    parsed.check_against(&c).unwrap();
    assert_eq!(parsed, p, "the optional fields survive the round trip");
    assert!(dir.join("README.md").exists());
    // The optional fields are checked like every other.
    let text = p.to_canonical();
    for (from, to) in [
        ("\"action\":\"press\"", "\"action\":\"Press!\""),
        ("\"layout\":\"port-bands\"", "\"layout\":\"rows\""),
    ] {
        assert!(text.contains(from), "{from}");
        let err = Profile::parse(text.replacen(from, to, 1).as_bytes()).unwrap_err();
        assert!(err.code_str().starts_with("FS01"), "{err}");
    }
}

#[test]
fn the_cook_2019_connectome_is_the_importers_output_of_the_committed_edge_list() {
    let dir = root().join("fixtures/profiles/celegans-cook2019");
    let source = std::fs::read(dir.join("herm_full_edgelist.csv")).unwrap();
    assert_eq!(
        flysim_types::digest::sha256(&source).hex(),
        "142693f17556148d7f962835b18ac6dd5af18b7467eef61815ebc1dd5474c0ca",
        "the file of cect 0.3.5, unaltered"
    );
    let meta = BTreeMap::from([
        ("dataset".to_owned(), "celegans-cook2019-herm".to_owned()),
        (
            "source".to_owned(),
            "cect 0.3.5 (PyPI), cect/data/herm_full_edgelist.csv".to_owned(),
        ),
        ("licence".to_owned(), "MIT".to_owned()),
        (
            "citation".to_owned(),
            "Cook et al. 2019, Nature 571:63-71, doi:10.1038/s41586-019-1352-7".to_owned(),
        ),
    ]);
    let text = String::from_utf8(source).unwrap();
    let c = import::edges(
        &Table {
            name: "herm_full_edgelist.csv",
            text: &text,
        },
        &[],
        &meta,
    )
    .unwrap();
    let committed = std::fs::read(dir.join("celegans-cook2019.flycsr")).unwrap();
    assert_eq!(format::encode(&c), committed);
    assert_eq!((c.neurons(), c.edges()), (448, 6_625));
    let synapses: i64 = c.weights().iter().map(|&w| i64::from(w)).sum();
    assert_eq!(synapses, 39_702, "every synapse of the source table");
    assert!(dir.join("README.md").exists() && dir.join("LICENSE").exists());
}

#[test]
fn the_cook_2019_connectome_runs_deterministically() {
    let dir = root().join("fixtures/profiles/celegans-cook2019");
    let c = Arc::new(
        format::decode(&std::fs::read(dir.join("celegans-cook2019.flycsr")).unwrap()).unwrap(),
    );
    let (_, mut p) = generate::arena_toy_v1();
    let all: Vec<u32> = (0..c.neurons()).collect();
    let id = |s: &str| flysim_types::Id::parse(s).unwrap();
    p.id = id("celegans-smoke");
    p.connectome = profile::ConnectomeRef {
        file: "celegans-cook2019.flycsr".to_owned(),
        digest: c.digest(),
        neurons: c.neurons(),
        edges: c.edges() as u32,
    };
    p.kernel.lif_1ms_mut().unwrap().noise_kicks = 4;
    p.roles = (0..8)
        .map(|i| profile::Role {
            id: id(&format!("command_{i}")),
            neurons: all.iter().copied().filter(|n| n % 8 == i).collect(),
        })
        .collect();
    p.rate_roles = (0..8).map(|i| id(&format!("command_{i}"))).collect();
    p.retina.channels.clear();
    p.stimuli.clear();
    p.plasticity = None;
    let run = || {
        let mut b = Brain::new(p.clone(), c.clone(), 1, 1).unwrap();
        b.prepare(1_000, &[]).unwrap();
        (b.membrane_digest(), b.telemetry().population_rate_hz)
    };
    let (d, rate) = run();
    assert_eq!(run().0, d);
    assert!(rate > 0.0, "the worm spikes");
}

#[test]
fn the_committed_schema_is_current() {
    let path = root().join("crates/brain/schemas/brain-profile-v1.schema.json");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap_or_default(),
        profile::schema(),
        "rewrite {} from flysim_brain::profile::schema()",
        path.display()
    );
}

#[test]
fn profile_refusals_name_the_field() {
    let (p, c) = toy();
    let text = p.to_canonical();
    let refuse = |from: &str, to: &str, code: &str, needle: &str| {
        assert!(text.contains(from), "{from}");
        let err = Profile::parse(text.replacen(from, to, 1).as_bytes()).unwrap_err();
        assert_eq!(err.code_str(), code, "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    };
    refuse(
        "\"kernel\":{",
        "\"kernel\":{\"extra\":1,",
        "FS0120",
        "extra",
    );
    refuse(
        "\"id\":\"lif-1ms-v1\"",
        "\"id\":\"lif-2\"",
        "FS0122",
        "kernel.id",
    );
    refuse("\"tauMs\":20", "\"tauMs\":0", "FS0122", "kernel.tauMs");
    refuse(
        "\"rateRoles\":[\"command_0\"",
        "\"rateRoles\":[\"nobody\"",
        "FS0122",
        "rateRoles[0]",
    );
    let mut other = p.clone();
    other.roles[0].neurons.push(c.neurons());
    let err = Brain::new(other, c.clone(), 1, 1).unwrap_err();
    assert_eq!(err.code_str(), "FS0720");
    let mut other = p;
    other.connectome.digest = flysim_types::digest::sha256(b"x");
    assert_eq!(other.check_against(&c).unwrap_err().code_str(), "FS0720");
}
