use std::collections::BTreeSet;

use flysim_types::Id;

use super::{AppliedBatches, numbered};

fn id(text: &str) -> Id {
    Id::parse(text).unwrap()
}

#[test]
fn an_id_is_numbered_only_when_its_number_has_one_spelling() {
    assert_eq!(numbered("ep-1.batch-0"), Some(("ep-1.batch", 0)));
    assert_eq!(numbered("ep-1.batch-120"), Some(("ep-1.batch", 120)));
    assert_eq!(
        numbered("b-18446744073709551615"),
        Some(("b", u64::MAX)),
        "the largest u64"
    );
    for other in [
        "batch",
        "batch-",
        "batch-01",
        "batch-00",
        "batch-1a",
        "batch-18446744073709551616",
    ] {
        assert_eq!(numbered(other), None, "{other}");
    }
}

#[test]
fn the_sessions_batches_of_a_long_run_take_one_range() {
    let mut applied = AppliedBatches::default();
    for k in 0..100_000_u64 {
        let batch = id(&format!("episode-0.batch-{k}"));
        assert!(!applied.contains(&batch), "step {k} before it was applied");
        applied.insert(&batch);
        assert!(applied.contains(&batch), "step {k} after it was applied");
    }
    assert!(!applied.contains(&id("episode-0.batch-100000")));
    assert!(
        !applied.contains(&id("episode-1.batch-5")),
        "another episode"
    );
    let ranges: Vec<_> = applied.numbered.values().collect();
    assert_eq!(ranges.len(), 1);
    assert_eq!(ranges[0].iter().collect::<Vec<_>>(), vec![(&0, &99_999)]);
    assert!(applied.other.is_empty());
}

#[test]
fn numbers_applied_out_of_order_merge_into_ranges() {
    let mut applied = AppliedBatches::default();
    for n in [5, 7, 3, 6, 10, 4, 9] {
        applied.insert(&id(&format!("b-{n}")));
    }
    // 3..=7 joined from both sides (6 between 5 and 7, 4 between 3 and 5), 9..=10 from below.
    let ranges: Vec<(u64, u64)> = applied.numbered["b"]
        .iter()
        .map(|(s, e)| (*s, *e))
        .collect();
    assert_eq!(ranges, vec![(3, 7), (9, 10)]);
    for (n, present) in [
        (2, false),
        (3, true),
        (7, true),
        (8, false),
        (9, true),
        (10, true),
        (11, false),
    ] {
        assert_eq!(applied.contains(&id(&format!("b-{n}"))), present, "b-{n}");
    }
    applied.insert(&id("b-8"));
    assert_eq!(applied.numbered["b"].len(), 1, "8 joins the two ranges");
    applied.insert(&id(&format!("b-{}", u64::MAX)));
    assert!(applied.contains(&id(&format!("b-{}", u64::MAX))));
    assert!(!applied.contains(&id(&format!("b-{}", u64::MAX - 1))));
}

#[test]
fn other_spellings_are_other_ids() {
    let mut applied = AppliedBatches::default();
    applied.insert(&id("b-1"));
    assert!(
        !applied.contains(&id("b-01")),
        "a leading zero is another id"
    );
    applied.insert(&id("b-01"));
    applied.insert(&id("plain"));
    assert!(applied.contains(&id("b-01")));
    assert!(applied.contains(&id("plain")));
    assert!(!applied.contains(&id("b-001")));
    applied.clear();
    for gone in ["b-1", "b-01", "plain"] {
        assert!(!applied.contains(&id(gone)), "{gone} after clear");
    }
}

/// Random ids over a small alphabet, applied and asked in a seeded order, against a plain set.
#[test]
fn membership_is_a_plain_sets() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    let stems = ["a", "a-b", "x.batch", "0"];
    let mut applied = AppliedBatches::default();
    let mut model = BTreeSet::new();
    for _ in 0..20_000 {
        let stem = stems[next(stems.len() as u64) as usize];
        let text = match next(4) {
            0 => format!("{stem}-0{}", next(30)),
            1 => stem.to_owned(),
            _ => format!("{stem}-{}", next(60)),
        };
        let batch = id(&text);
        assert_eq!(applied.contains(&batch), model.contains(&text), "{text}");
        if next(2) == 0 {
            applied.insert(&batch);
            model.insert(text);
        }
    }
    assert!(model.len() > 100, "the walk applied {} ids", model.len());
}
