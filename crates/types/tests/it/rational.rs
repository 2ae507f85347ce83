//! RationalNs form, checked arithmetic, and the tick accumulator (contracts §2.1, §5.4).

use flysim_types::payload::RationalDocument;
use flysim_types::{ContractError, RationalNs, TickAccumulator, parse_payload};

fn r(n: u64, d: u64) -> RationalNs {
    RationalNs::new(n, d).unwrap()
}

fn reason(n: u64, d: u64) -> &'static str {
    match RationalNs::new(n, d) {
        Err(ContractError::InvalidRational { reason, .. }) => reason,
        other => panic!("{n}/{d}: {other:?}"),
    }
}

#[test]
fn form_is_enforced() {
    assert_eq!(reason(2, 4), "the fraction is not reduced");
    assert_eq!(reason(1, 0), "the denominator is zero");
    assert_eq!(reason(0, 2), "zero is written only as 0/1");
    assert_eq!(r(0, 1), RationalNs::ZERO);
    assert!(RationalNs::ZERO.positive().is_err());
    assert_eq!(r(8_572_265_625, 512).to_string(), "8572265625/512");
}

#[test]
fn wire_form_refuses_negative_numbers_and_bad_forms() {
    let ok: RationalDocument =
        parse_payload(br#"{"numerator":"8572265625","denominator":"512"}"#).unwrap();
    assert_eq!(ok.0, r(8_572_265_625, 512));
    let codes = [
        (
            r#"{"numerator":"-1","denominator":"1"}"#,
            "FS0102",
            "numerator",
        ),
        (r#"{"numerator":"2","denominator":"4"}"#, "FS0104", ""),
        (r#"{"numerator":"1","denominator":"0"}"#, "FS0104", ""),
        (
            r#"{"numerator":1,"denominator":"1"}"#,
            "FS0121",
            "numerator",
        ),
        (r#"{"numerator":"1"}"#, "FS0121", ""),
        (
            r#"{"numerator":"1","denominator":"1","unit":"ns"}"#,
            "FS0120",
            "",
        ),
    ];
    for (doc, code, path) in codes {
        let err = parse_payload::<RationalDocument>(doc.as_bytes()).unwrap_err();
        assert_eq!(err.code_str(), code, "{doc}: {err}");
        let shown = err.to_string();
        if !path.is_empty() {
            assert!(shown.contains(&format!("`{path}`")), "{doc}: {shown}");
        }
    }
}

#[test]
fn arithmetic_is_exact_and_overflow_is_refused() {
    assert_eq!(r(1, 3).checked_add(r(1, 6)).unwrap(), r(1, 2));
    assert_eq!(r(1, 2).checked_sub(r(1, 3)).unwrap(), r(1, 6));
    assert_eq!(r(2, 3).checked_mul(r(3, 4)).unwrap(), r(1, 2));
    assert_eq!(r(7, 2).floor_div(r(1, 1)).unwrap(), 3);
    assert!(r(1, 3) < r(1, 2));
    let max = r(u64::MAX, 1);
    let overflow = |e: ContractError| e.code_str() == "FS0105";
    assert!(max.checked_add(r(1, 1)).is_err_and(overflow));
    assert!(max.checked_mul(r(2, 1)).is_err_and(overflow));
    assert!(r(1, u64::MAX).checked_mul(r(1, 2)).is_err_and(overflow));
    assert!(r(1, 3).checked_sub(r(1, 2)).is_err_and(overflow));
    // Large but exact: the u128 intermediate keeps it.
    assert_eq!(max.checked_mul(r(1, u64::MAX)).unwrap(), r(1, 1));
    assert_eq!(r(u64::MAX - 1, 1).checked_add(r(1, 1)).unwrap(), max);
}

fn ticks(step: RationalNs, n: usize) -> (Vec<u64>, Vec<RationalNs>) {
    let mut acc = TickAccumulator::new(RationalNs::MILLISECOND).unwrap();
    (0..n)
        .map(|_| (acc.advance(step).unwrap(), acc.remainder()))
        .unzip()
}

#[test]
fn sixty_hertz_on_a_millisecond_tick() {
    let (t, rem) = ticks(r(50_000_000, 3), 3);
    assert_eq!(t, [16, 17, 17]);
    assert_eq!(rem, [r(2_000_000, 3), r(1_000_000, 3), RationalNs::ZERO]);
    assert_eq!(ticks(r(16_000_000, 1), 2).0, [16, 16]);
    assert_eq!(ticks(r(500_000, 1), 2).0, [0, 1]);
}

#[test]
fn game_boy_frames_on_a_millisecond_tick() {
    let (t, rem) = ticks(r(8_572_265_625, 512), 12);
    assert_eq!(t, [16, 17, 17, 16, 17, 17, 17, 16, 17, 17, 17, 16]);
    assert_eq!(rem[0], r(380_265_625, 512));
}

#[test]
fn game_boy_accumulator_agrees_with_the_exact_count_over_100000_frames() {
    let step = r(8_572_265_625, 512);
    let mut acc = TickAccumulator::new(RationalNs::MILLISECOND).unwrap();
    for frame in 1..=100_000u64 {
        acc.advance(step).unwrap();
        // Ticks executed always equal floor(elapsed / 1 ms), computed independently.
        let elapsed_ns_x512 = u128::from(frame) * 8_572_265_625;
        assert_eq!(
            u128::from(acc.ticks()),
            elapsed_ns_x512 / (512 * 1_000_000),
            "frame {frame}"
        );
        assert!(acc.remainder() < RationalNs::MILLISECOND);
    }
}

#[test]
fn resume_refuses_a_remainder_of_a_whole_tick() {
    assert!(TickAccumulator::resume(RationalNs::MILLISECOND, RationalNs::MILLISECOND, 0).is_err());
    let acc = TickAccumulator::resume(RationalNs::MILLISECOND, r(2_000_000, 3), 16).unwrap();
    assert_eq!(acc.ticks(), 16);
}
