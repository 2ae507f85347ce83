//! The Shiu connectivity table read straight from Parquet (the feature `parquet`, which this
//! suite always has through its dev-dependency on the crate itself), on files written here with
//! the `parquet` crate's own writer: Snappy, Brotli and uncompressed; INT64, INT32 and unsigned
//! columns; several row groups; nullable columns; a pandas index column. The rows give the edges,
//! weights and signs computed by hand and the connectome of the CSV form of the same rows, and
//! refusals name the row and the column; a damaged file is read or refused, never a panic.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_brain::import::{self, Binary, Table};
use flysim_brain::{BrainError, Connectome};
use parquet::basic::{BrotliLevel, Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{DoubleType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// The root ids of the Completeness table below, in its row order (the neuron index).
const A: i64 = 720_575_940_600_000_030;
const B: i64 = 720_575_940_600_000_010;
const C: i64 = 720_575_940_600_000_020;

const COMPLETENESS: &str =
    ",Completed\n720575940600000030,True\n720575940600000010,False\n720575940600000020,True\n";

fn completeness() -> Table<'static> {
    Table {
        name: "Completeness_783.csv",
        text: COMPLETENESS,
    }
}

fn meta() -> BTreeMap<String, String> {
    BTreeMap::from([("dataset".to_owned(), "test".to_owned())])
}

/// The rows of the connectivity table: pre, post, pre index, post index, count, sign (the
/// product column is count × sign). A → B twice (12 + 2 synapses), B → C inhibitory, C → A.
const ROWS: [[i64; 6]; 4] = [
    [A, B, 0, 1, 12, 1],
    [B, C, 1, 2, 3, -1],
    [C, A, 2, 0, 1, 1],
    [A, B, 0, 1, 2, 1],
];

/// A column's values as the writer takes them.
#[derive(Debug, Clone)]
enum Values {
    I64(Vec<Option<i64>>),
    I32(Vec<Option<i32>>),
    /// INT64 with the logical type "unsigned 64-bit integer".
    U64(Vec<u64>),
    F64(Vec<f64>),
}

/// One column of a table to write.
#[derive(Debug, Clone)]
struct Col {
    name: &'static str,
    values: Values,
}

fn i64s(name: &'static str, v: impl IntoIterator<Item = i64>) -> Col {
    Col {
        name,
        values: Values::I64(v.into_iter().map(Some).collect()),
    }
}

fn i32s(name: &'static str, v: impl IntoIterator<Item = i64>) -> Col {
    Col {
        name,
        values: Values::I32(
            v.into_iter()
                .map(|x| Some(i32::try_from(x).unwrap()))
                .collect(),
        ),
    }
}

/// The Shiu columns of `rows` in the order of `Connectivity_783.parquet`, the integers that are
/// not root ids narrowed to INT32 when `narrow`.
fn shiu_columns(rows: &[[i64; 6]], narrow: bool) -> Vec<Col> {
    let int = if narrow { i32s } else { i64s };
    let col = |k: usize| rows.iter().map(move |r| r[k]);
    vec![
        i64s("Presynaptic_ID", col(0)),
        i64s("Postsynaptic_ID", col(1)),
        int("Presynaptic_Index", col(2).collect::<Vec<_>>()),
        int("Postsynaptic_Index", col(3).collect::<Vec<_>>()),
        int("Connectivity", col(4).collect::<Vec<_>>()),
        int("Excitatory", col(5).collect::<Vec<_>>()),
        int(
            "Excitatory x Connectivity",
            rows.iter().map(|r| r[4] * r[5]).collect::<Vec<_>>(),
        ),
    ]
}

/// The same rows as CSV, as `pandas.DataFrame.to_csv(index=False)` writes them.
fn shiu_csv(rows: &[[i64; 6]]) -> String {
    let mut s = "Presynaptic_ID,Postsynaptic_ID,Presynaptic_Index,Postsynaptic_Index,Connectivity,Excitatory,Excitatory x Connectivity\n".to_owned();
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[4] * r[5]
        ));
    }
    s
}

fn column_type(c: &Col) -> Type {
    let (physical, logical, nullable) = match &c.values {
        Values::I64(v) => (Physical::INT64, None, v.iter().any(Option::is_none)),
        Values::I32(v) => (Physical::INT32, None, v.iter().any(Option::is_none)),
        Values::U64(_) => (
            Physical::INT64,
            Some(LogicalType::integer(64, false)),
            false,
        ),
        Values::F64(_) => (Physical::DOUBLE, None, false),
    };
    // pandas writes every column as OPTIONAL; a column with a null must be.
    let repetition = if nullable || c.name.starts_with("__") {
        Repetition::OPTIONAL
    } else {
        Repetition::REQUIRED
    };
    Type::primitive_type_builder(c.name, physical)
        .with_repetition(repetition)
        .with_logical_type(logical)
        .build()
        .unwrap()
}

/// Definition levels and present values of a nullable slice.
fn split<T: Copy>(v: &[Option<T>]) -> (Vec<i16>, Vec<T>) {
    (
        v.iter().map(|x| i16::from(x.is_some())).collect(),
        v.iter().flatten().copied().collect(),
    )
}

/// `cols` written as a Parquet file compressed with `codec`, in row groups of `group` rows.
fn parquet(cols: &[Col], codec: Compression, group: usize) -> Vec<u8> {
    let schema = Type::group_type_builder("schema")
        .with_fields(cols.iter().map(|c| Arc::new(column_type(c))).collect())
        .build()
        .unwrap();
    let props = WriterProperties::builder().set_compression(codec).build();
    let mut w = SerializedFileWriter::new(Vec::new(), Arc::new(schema), Arc::new(props)).unwrap();
    let rows = match &cols[0].values {
        Values::I64(v) => v.len(),
        Values::I32(v) => v.len(),
        Values::U64(v) => v.len(),
        Values::F64(v) => v.len(),
    };
    for start in (0..rows).step_by(group) {
        let r = start..rows.min(start + group);
        let mut g = w.next_row_group().unwrap();
        for c in cols {
            let mut cw = g.next_column().unwrap().unwrap();
            let optional = column_type(c).get_basic_info().repetition() == Repetition::OPTIONAL;
            let defs = |d: Vec<i16>| optional.then_some(d);
            match &c.values {
                Values::I64(v) => {
                    let (d, x) = split(&v[r.clone()]);
                    cw.typed::<Int64Type>()
                        .write_batch(&x, defs(d).as_deref(), None)
                        .unwrap();
                }
                Values::I32(v) => {
                    let (d, x) = split(&v[r.clone()]);
                    cw.typed::<Int32Type>()
                        .write_batch(&x, defs(d).as_deref(), None)
                        .unwrap();
                }
                Values::U64(v) => {
                    let x: Vec<i64> = v[r.clone()].iter().map(|&u| u as i64).collect();
                    cw.typed::<Int64Type>().write_batch(&x, None, None).unwrap();
                }
                Values::F64(v) => {
                    cw.typed::<DoubleType>()
                        .write_batch(&v[r.clone()], None, None)
                        .unwrap();
                }
            }
            cw.close().unwrap();
        }
        g.close().unwrap();
    }
    w.into_inner().unwrap()
}

fn read(bytes: &[u8]) -> Result<Connectome, BrainError> {
    import::flywire_parquet(
        &completeness(),
        &Binary {
            name: "Connectivity_783.parquet",
            bytes,
        },
        &meta(),
    )
}

fn csv(text: &str) -> Connectome {
    import::flywire(
        &completeness(),
        &Table {
            name: "Connectivity_783.csv",
            text,
        },
        &meta(),
    )
    .unwrap()
}

/// The code, row, column and reason of a refusal.
fn place(err: &BrainError) -> (String, u64, u64, String) {
    match err {
        BrainError::ImportSyntax {
            source_name,
            line,
            column,
            reason,
        }
        | BrainError::ImportInconsistent {
            source_name,
            line,
            column,
            reason,
        } => {
            assert_eq!(source_name, "Connectivity_783.parquet");
            (err.code_str(), *line, *column, reason.clone())
        }
        other => panic!("not an import refusal: {other}"),
    }
}

const SNAPPY: Compression = Compression::SNAPPY;

#[test]
fn a_parquet_table_gives_the_hand_computed_edges_weights_and_signs() {
    // pandas' index column first, as `to_parquet` writes a non-range index; two row groups.
    let mut cols = vec![i64s("__index_level_0__", [7, 8, 9, 10])];
    cols.extend(shiu_columns(&ROWS, false));
    let bytes = parquet(&cols, SNAPPY, 2);
    assert!(import::is_parquet(&bytes));
    let c = read(&bytes).unwrap();
    assert_eq!(
        c.names().unwrap(),
        [
            "720575940600000030",
            "720575940600000010",
            "720575940600000020"
        ]
    );
    // A(0) -> B(1): 12 + 2; B(1) -> C(2): 3 inhibitory; C(2) -> A(0): 1.
    assert_eq!(c.indptr(), [0, 1, 2, 3]);
    assert_eq!(c.targets(), [1, 2, 0]);
    assert_eq!(c.weights(), [14, -3, 1]);
    assert_eq!(c.meta()["importer"], "flywire");
    assert_eq!(c.meta()["dataset"], "test");
}

#[test]
fn every_codec_and_integer_width_gives_the_csv_forms_connectome() {
    let from_csv = csv(&shiu_csv(&ROWS));
    for codec in [
        Compression::UNCOMPRESSED,
        SNAPPY,
        Compression::BROTLI(BrotliLevel::default()),
    ] {
        for narrow in [false, true] {
            for group in [1, 3, 4] {
                let bytes = parquet(&shiu_columns(&ROWS, narrow), codec, group);
                let c = read(&bytes).unwrap_or_else(|e| panic!("{codec:?} {narrow}: {e}"));
                assert_eq!(c, from_csv, "{codec:?}, narrow {narrow}, groups of {group}");
                assert_eq!(c.digest(), from_csv.digest());
            }
        }
    }
}

#[test]
fn count_and_sign_columns_unsigned_ids_and_any_column_order_give_the_same_connectome() {
    let from_csv = csv(&shiu_csv(&ROWS));
    // No product column and no index columns: Connectivity × Excitatory, columns reordered,
    // root ids as unsigned 64-bit integers, the sign as INT32.
    let col = |k: usize| ROWS.iter().map(move |r| r[k]);
    let cols = vec![
        i32s("Excitatory", col(5)),
        Col {
            name: "Postsynaptic_ID",
            values: Values::U64(col(1).map(|v| v as u64).collect()),
        },
        i64s("Connectivity", col(4)),
        Col {
            name: "Presynaptic_ID",
            values: Values::U64(col(0).map(|v| v as u64).collect()),
        },
    ];
    let c = read(&parquet(&cols, SNAPPY, 4)).unwrap();
    assert_eq!(c, from_csv);
}

#[test]
fn a_missing_column_or_one_without_integers_is_refused_naming_it() {
    let mut cols = shiu_columns(&ROWS, false);
    cols.remove(1); // Postsynaptic_ID
    let err = read(&parquet(&cols, SNAPPY, 4)).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0710", 0, 0));
    assert!(reason.contains("no `Postsynaptic_ID` column"), "{reason}");
    assert!(
        reason.contains("Presynaptic_ID, Presynaptic_Index"),
        "{reason}"
    );
    // Counts written as floats: refused at the column, before any row is read.
    let mut cols = shiu_columns(&ROWS, false);
    cols.truncate(4);
    cols.push(Col {
        name: "Connectivity",
        values: Values::F64(vec![12.0, 3.0, 1.0, 2.0]),
    });
    cols.push(i64s("Excitatory", ROWS.iter().map(|r| r[5])));
    let err = read(&parquet(&cols, SNAPPY, 4)).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0710", 0, 5));
    assert!(
        reason.contains("`Connectivity` holds DOUBLE values, not integers"),
        "{reason}"
    );
    // Neither weight column.
    let mut cols = shiu_columns(&ROWS, false);
    cols.truncate(5);
    let err = read(&parquet(&cols, SNAPPY, 4)).unwrap_err();
    assert!(place(&err).3.contains("neither"), "{err}");
}

#[test]
fn bad_values_are_refused_at_their_row_and_column() {
    // A null product in row 3 (the second row group): FS0710 at 3:7.
    let mut cols = shiu_columns(&ROWS, false);
    cols[6].values = Values::I64(vec![Some(12), Some(-3), None, Some(2)]);
    let err = read(&parquet(&cols, SNAPPY, 2)).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0710", 3, 7));
    assert_eq!(reason, "Excitatory x Connectivity is null");
    // A negative root id in row 2: FS0710 at 2:2.
    let mut rows = ROWS;
    rows[1][1] = -5;
    let err = read(&parquet(&shiu_columns(&rows, false), SNAPPY, 4)).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0710", 2, 2));
    assert_eq!(
        reason,
        "Postsynaptic_ID -5 is not a root id (unsigned integer)"
    );
    // A sign that is neither 1 nor -1, without the product column: at the sign's cell.
    let mut rows = ROWS;
    rows[3][5] = 0;
    let mut cols = shiu_columns(&rows, true);
    cols.pop();
    let err = read(&parquet(&cols, SNAPPY, 4)).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0710", 4, 6));
    assert_eq!(reason, "Excitatory is 0, not 1 or -1");
    // An unsigned count beyond the signed 64-bit range.
    let col = |k: usize| ROWS.iter().map(move |r| r[k]);
    let cols = vec![
        i64s("Presynaptic_ID", col(0)),
        i64s("Postsynaptic_ID", col(1)),
        Col {
            name: "Connectivity",
            values: Values::U64(vec![12, u64::MAX, 1, 2]),
        },
        i64s("Excitatory", col(5)),
    ];
    let err = read(&parquet(&cols, SNAPPY, 4)).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0710", 2, 3));
    assert_eq!(reason, "Connectivity 18446744073709551615 is out of range");
}

#[test]
fn rows_that_contradict_the_completeness_table_are_refused_at_their_row_and_column() {
    // A root id the Completeness table does not list, in row 3 (second row group).
    let mut rows = ROWS;
    rows[2][0] = 720_575_940_600_000_099;
    let err = read(&parquet(&shiu_columns(&rows, false), SNAPPY, 2)).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0711", 3, 1));
    assert_eq!(
        reason,
        "root id 720575940600000099 is not in Completeness_783.csv"
    );
    // An index column that disagrees with the Completeness order.
    let mut rows = ROWS;
    rows[1][3] = 0;
    let err = read(&parquet(&shiu_columns(&rows, true), SNAPPY, 4)).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0711", 2, 4));
    assert_eq!(
        reason,
        "Postsynaptic_Index 0 disagrees with the Completeness order (2)"
    );
    // The CSV form refuses the same row, one line further down (after the header).
    let err = import::flywire(
        &completeness(),
        &Table {
            name: "Connectivity_783.csv",
            text: &shiu_csv(&rows),
        },
        &meta(),
    )
    .unwrap_err();
    assert!(
        matches!(err, BrainError::ImportInconsistent { line: 3, .. }),
        "{err:?}"
    );
}

#[test]
fn bytes_that_are_not_parquet_are_refused_as_a_whole() {
    assert!(!import::is_parquet(shiu_csv(&ROWS).as_bytes()));
    let mut bytes = parquet(&shiu_columns(&ROWS, false), SNAPPY, 4);
    // Truncated: the footer is gone.
    bytes.truncate(bytes.len() / 2);
    assert!(import::is_parquet(&bytes));
    let err = read(&bytes).unwrap_err();
    let (code, line, column, reason) = place(&err);
    assert_eq!((code.as_str(), line, column), ("FS0710", 0, 0));
    assert!(
        reason.starts_with("not a Parquet file this build reads"),
        "{reason}"
    );
}

#[test]
fn damaged_files_are_read_or_refused_with_a_code_never_a_panic() {
    // Dictionary pages, two row groups, Snappy: every byte flipped two ways, every truncation.
    let good = parquet(&shiu_columns(&ROWS, false), SNAPPY, 2);
    let mut refused = 0;
    for i in 0..good.len() {
        for bits in [0x01u8, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= bits;
            if let Err(e) = read(&bad) {
                assert!(
                    matches!(e.code_str().as_str(), "FS0710" | "FS0711"),
                    "byte {i} ^ {bits:#x}: {e}"
                );
                refused += 1;
            }
        }
    }
    assert!(
        refused > good.len() / 2,
        "{refused} of {} refused",
        2 * good.len()
    );
    for n in 0..good.len() {
        let err = read(&good[..n]).unwrap_err();
        assert_eq!(err.code_str(), "FS0710", "cut at {n}: {err}");
    }
}
