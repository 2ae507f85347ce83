//! The asset registry: add (idempotent, atomic), list, verify, and lookups from compositions.

use flysim_compose::assets::Added;
use flysim_compose::{AssetError, AssetRegistry};
use flysim_types::Id;

use crate::{plan_with, root};

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

#[test]
fn add_is_idempotent_and_content_addressed() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = AssetRegistry::at(tmp.path().join("assets"));
    let rom = root().join("fixtures/roms/fly-arena.gb");
    let (record, added) = registry.add(&rom, &id("fly-arena"), &id("gb")).unwrap();
    assert_eq!(added, Added::New);
    assert_eq!(record.byte_length.get(), 32_768);
    let bytes = std::fs::read(&rom).unwrap();
    assert_eq!(record.digest, flysim_types::digest::sha256(&bytes));
    assert_eq!(
        std::fs::read(registry.blob_path(&record.digest)).unwrap(),
        bytes
    );
    let (again, added) = registry.add(&rom, &id("fly-arena"), &id("gb")).unwrap();
    assert_eq!((again, added), (record.clone(), Added::AlreadyPresent));
    // A second id for the same bytes shares the blob.
    registry
        .add(&rom, &id("fly-arena-copy"), &id("gb"))
        .unwrap();
    let listed: Vec<String> = registry
        .list()
        .unwrap()
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(listed, ["fly-arena", "fly-arena-copy"]);
    assert!(registry.verify().unwrap().is_empty());
    // Nothing is left behind in tmp/.
    let leftovers = std::fs::read_dir(tmp.path().join("assets/tmp"))
        .unwrap()
        .count();
    assert_eq!(leftovers, 0);
}

#[test]
fn assets_add_refuses_to_repoint_an_id() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = AssetRegistry::at(tmp.path());
    registry
        .add(
            &root().join("fixtures/roms/fly-arena.gb"),
            &id("rom"),
            &id("gb"),
        )
        .unwrap();
    let err = registry
        .add(
            &root().join("fixtures/seed-vectors.json"),
            &id("rom"),
            &id("json"),
        )
        .unwrap_err();
    assert!(matches!(err, AssetError::IdConflict { .. }));
    assert_eq!(
        miette::Diagnostic::code(&err).unwrap().to_string(),
        "FS0254"
    );
}

#[test]
fn assets_add_reports_an_unreadable_file() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = AssetRegistry::at(tmp.path());
    let err = registry
        .add(&tmp.path().join("no-such-file.gb"), &id("rom"), &id("gb"))
        .unwrap_err();
    assert_eq!(
        miette::Diagnostic::code(&err).unwrap().to_string(),
        "FS0255"
    );
}

#[test]
fn assets_verify_names_a_corrupt_blob() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = AssetRegistry::at(tmp.path());
    let (record, _) = registry
        .add(
            &root().join("fixtures/roms/fly-arena.gb"),
            &id("rom"),
            &id("gb"),
        )
        .unwrap();
    let blob = registry.blob_path(&record.digest);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();
    let corrupt = registry.verify().unwrap();
    assert_eq!(corrupt.len(), 1, "{corrupt:?}");
    assert_eq!(
        miette::Diagnostic::code(&corrupt[0]).unwrap().to_string(),
        "FS0253"
    );
    assert!(corrupt[0].to_string().contains(&record.digest.hex()));
}

#[test]
fn a_composition_finds_its_content_in_the_registry_by_id() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = AssetRegistry::at(tmp.path().join("assets"));
    registry
        .add(
            &root().join("fixtures/roms/fly-arena.gb"),
            &id("fly-arena"),
            &id("gb"),
        )
        .unwrap();
    let text = std::fs::read_to_string(root().join("compositions/gameboy.kdl")).unwrap();
    let by_id = text.replace(
        r#"content "fly-arena" path="../fixtures/roms/fly-arena.gb""#,
        r#"content "fly-arena""#,
    );
    assert_ne!(by_id, text);
    // The profile's own assets stay beside the composition, as in the repository.
    let profiles = tmp.path().join("fixtures/profiles/arena-toy-v1");
    std::fs::create_dir_all(&profiles).unwrap();
    for file in ["arena-toy-v1.json", "arena-toy-v1.flycsr"] {
        std::fs::copy(
            root().join("fixtures/profiles/arena-toy-v1").join(file),
            profiles.join(file),
        )
        .unwrap();
    }
    std::fs::create_dir_all(tmp.path().join("compositions")).unwrap();
    let path = tmp.path().join("compositions/by-id.kdl");
    std::fs::write(&path, by_id).unwrap();
    let plan = plan_with(&path, "by-id.kdl", Some(&registry)).unwrap();
    let asset = plan
        .assets
        .iter()
        .find(|a| a.id.as_str() == "fly-arena")
        .unwrap();
    assert_eq!(asset.path, None);
    assert_eq!(asset.format.as_str(), "gb");
    let by_path = crate::plan_at(&root().join("compositions/gameboy.kdl"), "g").unwrap();
    let by_path_rom = by_path
        .assets
        .iter()
        .find(|a| a.id.as_str() == "fly-arena")
        .unwrap();
    assert_eq!(asset.digest, by_path_rom.digest);
    // Without the registry the same composition is refused, naming the asset.
    let diags = plan_with(&path, "by-id.kdl", None).unwrap_err();
    assert_eq!(diags[0].code(), "FS0250");
}

#[test]
fn of_two_concurrent_adds_under_one_id_one_wins_and_the_other_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = AssetRegistry::at(tmp.path().join("assets"));
    let files = [
        root().join("fixtures/roms/fly-arena.gb"),
        root().join("fixtures/seed-vectors.json"),
    ];
    let digests = files
        .each_ref()
        .map(|f| flysim_types::digest::sha256(&std::fs::read(f).unwrap()));
    // Several rounds, each a fresh id: both adds start together and find the id unbound.
    for round in 0..8 {
        let id = id(&format!("race-{round}"));
        let start = std::sync::Barrier::new(2);
        let outcomes: Vec<_> = std::thread::scope(|s| {
            let adds: Vec<_> = files
                .iter()
                .map(|file| {
                    let (registry, id, start) = (&registry, &id, &start);
                    s.spawn(move || {
                        start.wait();
                        registry.add(file, id, &self::id("bin"))
                    })
                })
                .collect();
            adds.into_iter().map(|a| a.join().unwrap()).collect()
        });
        let winners: Vec<usize> = (0..2).filter(|&i| outcomes[i].is_ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        let (winner, loser) = (winners[0], 1 - winners[0]);
        let (record, added) = outcomes[winner].as_ref().unwrap();
        assert_eq!((record.digest, *added), (digests[winner], Added::New));
        match &outcomes[loser] {
            Err(e @ AssetError::IdConflict { existing, new, .. }) => {
                assert_eq!(miette::Diagnostic::code(e).unwrap().to_string(), "FS0254");
                assert_eq!(*existing, digests[winner].hex());
                assert_eq!(*new, digests[loser].hex());
            }
            other => panic!("round {round}: the loser must be refused: {other:?}"),
        }
        // The id names the winner's bytes.
        assert_eq!(registry.get(&id).unwrap().unwrap().digest, digests[winner]);
    }
    assert!(registry.verify().unwrap().is_empty());
    let leftovers = std::fs::read_dir(tmp.path().join("assets/tmp"))
        .unwrap()
        .count();
    assert_eq!(leftovers, 0);
}
