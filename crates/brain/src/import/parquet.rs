//! The Shiu connectivity table read straight from Parquet (`Connectivity_783.parquet` as the
//! Shiu et al. repository ships it), behind the Cargo feature `parquet`.
//!
//! The file is read with the `parquet` crate's column readers (no Arrow): the footer, then row
//! group by row group only the columns the table needs, found by name (`flywire::Columns`), in
//! batches read in lockstep; other columns, such as the index column pandas may write, are not
//! decoded. (Its row reader would be simpler but was 3.5 times slower on 15 M rows, and compiled
//! no faster.) A needed column must hold integers (INT32 or INT64, of any width, signed or
//! unsigned, no other logical type, not nested); a nullable column is read, but a null is
//! refused. Column chunks must be uncompressed, Snappy (pandas' default) or Brotli (what the
//! Shiu repository's helpers write) compressed. Every refusal is `FS0710` (or `FS0711` from the
//! assembly) at `row:column`: the 1-based row of the table and the 1-based position of the
//! column in the file's schema, the reason naming the column. A footer entry the `parquet` crate
//! would assert on is refused before any page is read, and a page it panics on is caught and
//! refused.
//!
//! This module knows Parquet and where the Shiu columns are in it; what a row means (root ids
//! against the Completeness order, the signed count) is `flywire`'s.

use std::panic::AssertUnwindSafe;

use bytes::Bytes;
use parquet::basic::{Compression, ConvertedType, Encoding, LogicalType, Type as Physical};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{DataType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::reader::{FileReader, RowGroupReader};
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::schema::types::{ColumnDescPtr, ColumnDescriptor};

use crate::error::BrainError;
use crate::import::Binary;
use crate::import::flywire::{At, BadWeight, Columns, Link, Weight, signed_count};
use crate::import::table::syntax;

/// Rows read per column and batch.
const BATCH: usize = 65_536;

/// How an integer column's bits are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sign {
    Signed,
    Unsigned,
}

/// One column the table needs: its position in the schema (0-based), name and sign.
#[derive(Debug, Clone, Copy)]
struct Column<'a> {
    index: usize,
    name: &'a str,
    sign: Sign,
}

/// The name of a compression codec, as Parquet spells it.
fn codec_name(c: Compression) -> &'static str {
    match c {
        Compression::UNCOMPRESSED => "UNCOMPRESSED",
        Compression::SNAPPY => "SNAPPY",
        Compression::GZIP(_) => "GZIP",
        Compression::LZO => "LZO",
        Compression::BROTLI(_) => "BROTLI",
        Compression::LZ4 => "LZ4",
        Compression::ZSTD(_) => "ZSTD",
        Compression::LZ4_RAW => "LZ4_RAW",
    }
}

/// How the integers of column `d` are read, or why it holds no integers this reader takes.
fn integer_sign(d: &ColumnDescriptor) -> Result<Sign, String> {
    let name = d.name();
    if d.max_rep_level() > 0 || d.path().parts().len() != 1 {
        return Err(format!(
            "column `{name}` is nested or repeated; a connectivity column holds one integer per row"
        ));
    }
    let physical = d.physical_type();
    if !matches!(physical, Physical::INT32 | Physical::INT64) {
        return Err(format!(
            "column `{name}` holds {physical:?} values, not integers (INT32 or INT64)"
        ));
    }
    match (d.logical_type_ref(), d.converted_type()) {
        (Some(LogicalType::Integer(int)), _) if !int.is_signed => Ok(Sign::Unsigned),
        (Some(LogicalType::Integer(_)), _) => Ok(Sign::Signed),
        (Some(other), _) => Err(format!(
            "column `{name}` holds {other:?} values, not plain integers"
        )),
        (
            None,
            ConvertedType::UINT_8
            | ConvertedType::UINT_16
            | ConvertedType::UINT_32
            | ConvertedType::UINT_64,
        ) => Ok(Sign::Unsigned),
        (
            None,
            ConvertedType::NONE
            | ConvertedType::INT_8
            | ConvertedType::INT_16
            | ConvertedType::INT_32
            | ConvertedType::INT_64,
        ) => Ok(Sign::Signed),
        (None, other) => Err(format!(
            "column `{name}` holds {other:?} values, not plain integers"
        )),
    }
}

/// A typed reader of one integer column chunk and its buffers.
enum Typed {
    I32(Box<ColumnReaderImpl<Int32Type>>, Vec<i32>),
    I64(Box<ColumnReaderImpl<Int64Type>>, Vec<i64>),
}

/// Reads up to `n` records of one column of physical type `T` into `values`, each widened by
/// `widen` (as signed or unsigned, as the column's logical type says); how many it read.
fn batch<T: DataType>(
    reader: &mut ColumnReaderImpl<T>,
    buf: &mut Vec<T::T>,
    n: usize,
    levels: Option<&mut Vec<i16>>,
    values: &mut Vec<i128>,
    widen: impl Fn(T::T) -> i128,
) -> Result<usize, ParquetError> {
    let (got, _, _) = reader.read_records(n, levels, None, buf)?;
    values.extend(buf.drain(..).map(widen));
    Ok(got)
}

/// One needed column of one row group, read batch by batch.
struct Cursor<'a> {
    column: Column<'a>,
    typed: Typed,
    /// The definition level of a present value (0: the column is required).
    max_def: i16,
    levels: Vec<i16>,
    /// The last batch, one value per row.
    values: Vec<i128>,
}

impl<'a> Cursor<'a> {
    fn new(name: &str, group: &dyn RowGroupReader, column: Column<'a>) -> Result<Self, BrainError> {
        let at = column.index + 1;
        let cannot = |e: ParquetError| {
            syntax(
                name,
                0,
                at,
                format!("column `{}` cannot be read: {e}", column.name),
            )
        };
        let max_def = group
            .metadata()
            .column(column.index)
            .column_descr()
            .max_def_level();
        let typed = match group.get_column_reader(column.index).map_err(cannot)? {
            ColumnReader::Int32ColumnReader(r) => Typed::I32(Box::new(r), Vec::new()),
            ColumnReader::Int64ColumnReader(r) => Typed::I64(Box::new(r), Vec::new()),
            _ => {
                return Err(syntax(
                    name,
                    0,
                    at,
                    format!(
                        "column `{}` changes its type between row groups",
                        column.name
                    ),
                ));
            }
        };
        Ok(Self {
            column,
            typed,
            max_def,
            levels: Vec::new(),
            values: Vec::new(),
        })
    }

    /// Reads the next `n` rows (the first is row `first`, 1-based) into `values`; `FS0710` for a
    /// null, a short column or a chunk the reader cannot decode.
    fn read(&mut self, name: &str, n: usize, first: usize) -> Result<(), BrainError> {
        let at = self.column.index + 1;
        let col = self.column.name;
        let cannot = |e: ParquetError| {
            syntax(
                name,
                first,
                at,
                format!("column `{col}` cannot be read: {e}"),
            )
        };
        self.levels.clear();
        self.values.clear();
        let unsigned = self.column.sign == Sign::Unsigned;
        let mut records = 0;
        while records < n {
            let levels = (self.max_def > 0).then_some(&mut self.levels);
            let got = match &mut self.typed {
                Typed::I32(r, buf) => batch(r, buf, n - records, levels, &mut self.values, |v| {
                    if unsigned {
                        i128::from(v.cast_unsigned())
                    } else {
                        i128::from(v)
                    }
                }),
                Typed::I64(r, buf) => batch(r, buf, n - records, levels, &mut self.values, |v| {
                    if unsigned {
                        i128::from(v.cast_unsigned())
                    } else {
                        i128::from(v)
                    }
                }),
            }
            .map_err(cannot)?;
            if got == 0 {
                return Err(syntax(
                    name,
                    first + records,
                    at,
                    format!("column `{col}` ends before the row group's last row"),
                ));
            }
            records += got;
        }
        if self.max_def > 0
            && let Some(k) = self.levels.iter().position(|&l| l < self.max_def)
        {
            return Err(syntax(name, first + k, at, format!("{col} is null")));
        }
        Ok(())
    }

    /// Row `k` of the last batch as a root id, `FS0710` when it is negative.
    fn root_id(&self, name: &str, line: usize, k: usize) -> Result<At<u64>, BrainError> {
        self.value(name, line, k, "is not a root id (unsigned integer)")
    }

    /// Row `k` of the last batch as a signed 64-bit integer, `FS0710` when it does not fit.
    fn int(&self, name: &str, line: usize, k: usize) -> Result<At<i64>, BrainError> {
        self.value(name, line, k, "is out of range")
    }

    /// Row `k` of the last batch as a `T`, `FS0710` saying the value `refusal` when it does not
    /// fit.
    fn value<T: TryFrom<i128>>(
        &self,
        name: &str,
        line: usize,
        k: usize,
        refusal: &str,
    ) -> Result<At<T>, BrainError> {
        let v = self.values[k];
        let column = self.column.index + 1;
        T::try_from(v)
            .map(|value| At { value, column })
            .map_err(|_| {
                let what = format!("{} {v} {refusal}", self.column.name);
                syntax(name, line, column, what)
            })
    }
}

/// The cursors of one row group, in the order of a [`Columns`] of indices into them.
struct Group<'a> {
    cursors: Vec<Cursor<'a>>,
}

impl Group<'_> {
    /// Row `k` of the last batch, the `line`-th of the table.
    fn link(
        &self,
        name: &str,
        cols: &Columns<usize>,
        line: usize,
        k: usize,
    ) -> Result<Link, BrainError> {
        let c = &self.cursors;
        let weight = match cols.weight {
            Weight::Product(p) => c[p].int(name, line, k)?.value,
            Weight::CountAndSign(count, sign) => {
                let (n, s) = (c[count].int(name, line, k)?, c[sign].int(name, line, k)?);
                signed_count(n.value, s.value).map_err(|bad| match bad {
                    BadWeight::Count(reason) => syntax(name, line, n.column, reason),
                    BadWeight::Sign(reason) => syntax(name, line, s.column, reason),
                })?
            }
        };
        Ok(Link {
            line,
            pre: c[cols.pre].root_id(name, line, k)?,
            post: c[cols.post].root_id(name, line, k)?,
            pre_index: cols
                .pre_index
                .map(|i| c[i].int(name, line, k))
                .transpose()?,
            post_index: cols
                .post_index
                .map(|i| c[i].int(name, line, k))
                .transpose()?,
            weight,
        })
    }
}

/// The needed columns: where each is in the schema, and where its cursor is in a [`Group`].
fn find_columns<'a>(
    name: &str,
    schema: &'a [ColumnDescPtr],
) -> Result<(Vec<Column<'a>>, Columns<usize>), BrainError> {
    let position = |wanted: &str| {
        schema
            .iter()
            .position(|d| d.path().parts().len() == 1 && d.name() == wanted)
    };
    let by_schema = Columns::find("table", position).map_err(|reason| {
        let names: Vec<&str> = schema.iter().map(|d| d.name()).collect();
        syntax(
            name,
            0,
            0,
            format!("{reason} (its columns: {})", names.join(", ")),
        )
    })?;
    let mut needed: Vec<Column<'a>> = Vec::new();
    let mut slot = |index: usize| -> Result<usize, BrainError> {
        let d = &schema[index];
        let sign = integer_sign(d).map_err(|reason| syntax(name, 0, index + 1, reason))?;
        needed.push(Column {
            index,
            name: d.name(),
            sign,
        });
        Ok(needed.len() - 1)
    };
    let weight = match by_schema.weight {
        Weight::Product(p) => Weight::Product(slot(p)?),
        Weight::CountAndSign(count, sign) => Weight::CountAndSign(slot(count)?, slot(sign)?),
    };
    let cols = Columns {
        pre: slot(by_schema.pre)?,
        post: slot(by_schema.post)?,
        pre_index: by_schema.pre_index.map(&mut slot).transpose()?,
        post_index: by_schema.post_index.map(&mut slot).transpose()?,
        weight,
    };
    Ok((needed, cols))
}

/// Why a column chunk's footer entry cannot be right for a file of `len` bytes, if it cannot:
/// the `parquet` crate asserts the first and expects a dictionary page for the second.
fn misplaced(chunk: &ColumnChunkMetaData, len: usize) -> Option<&'static str> {
    let start = chunk
        .dictionary_page_offset()
        .unwrap_or_else(|| chunk.data_page_offset());
    let size = chunk.compressed_size();
    let inside = u64::try_from(start)
        .ok()
        .zip(u64::try_from(size).ok())
        .and_then(|(a, b)| a.checked_add(b))
        .is_some_and(|end| end <= len as u64);
    if !inside {
        return Some("its chunk lies outside the file");
    }
    let dictionary = chunk
        .encodings()
        .any(|e| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY));
    (dictionary && chunk.dictionary_page_offset().is_none())
        .then_some("its chunk is dictionary encoded but has no dictionary page")
}

/// Reads the connectivity table `t` (Parquet bytes) and gives `push` every row, in order.
///
/// # Errors
///
/// `FS0710` for bytes that are not Parquet this reader takes, a missing column, a column that
/// holds no integers, a codec it does not decode, a null or a value out of range; whatever
/// `push` returns.
pub(crate) fn connectivity(
    t: &Binary<'_>,
    mut push: impl FnMut(&Link) -> Result<(), BrainError>,
) -> Result<(), BrainError> {
    let name = t.name;
    let reader = SerializedFileReader::new(Bytes::copy_from_slice(t.bytes)).map_err(|e| {
        syntax(
            name,
            0,
            0,
            format!("not a Parquet file this build reads: {e}"),
        )
    })?;
    let meta = reader.metadata();
    let schema = meta.file_metadata().schema_descr().columns();
    let (needed, cols) = find_columns(name, schema)?;
    // The needed chunks' places and codecs are checked before any page is read.
    for (g, group) in meta.row_groups().iter().enumerate() {
        for c in &needed {
            let chunk = group.column(c.index);
            if let Some(reason) = misplaced(chunk, t.bytes.len()) {
                return Err(syntax(
                    name,
                    0,
                    c.index + 1,
                    format!("column `{}` in row group {g}: {reason}", c.name),
                ));
            }
            let codec = chunk.compression();
            if !matches!(
                codec,
                Compression::UNCOMPRESSED | Compression::SNAPPY | Compression::BROTLI(_)
            ) {
                return Err(syntax(
                    name,
                    0,
                    c.index + 1,
                    format!(
                        "column `{}` is compressed with {}; this reader takes UNCOMPRESSED, SNAPPY or BROTLI",
                        c.name,
                        codec_name(codec)
                    ),
                ));
            }
        }
    }
    // A page the footer does not describe can still make the `parquet` crate panic (an encoding
    // it has no decoder for, 3 in 60,000 random mutations of the test files); that is refused
    // like any other unreadable file, though the panic hook has said its piece.
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        read_rows(name, &reader, &needed, &cols, &mut push)
    }))
    .unwrap_or_else(|_| {
        Err(syntax(
            name,
            0,
            0,
            "a page cannot be decoded (the Parquet reader stopped on it)",
        ))
    })
}

/// Gives `push` every row of `reader`, decoding the `needed` columns.
fn read_rows(
    name: &str,
    reader: &SerializedFileReader<Bytes>,
    needed: &[Column<'_>],
    cols: &Columns<usize>,
    push: &mut impl FnMut(&Link) -> Result<(), BrainError>,
) -> Result<(), BrainError> {
    let mut first = 1usize;
    for g in 0..reader.num_row_groups() {
        let group = reader
            .get_row_group(g)
            .map_err(|e| syntax(name, first, 0, format!("row group {g} cannot be read: {e}")))?;
        let rows = usize::try_from(group.metadata().num_rows()).unwrap_or(0);
        let mut cursors = Group {
            cursors: needed
                .iter()
                .map(|c| Cursor::new(name, group.as_ref(), *c))
                .collect::<Result<_, _>>()?,
        };
        let mut done = 0;
        while done < rows {
            let n = BATCH.min(rows - done);
            for c in &mut cursors.cursors {
                c.read(name, n, first + done)?;
            }
            for k in 0..n {
                push(&cursors.link(name, cols, first + done + k, k)?)?;
            }
            done += n;
        }
        first += rows;
    }
    Ok(())
}
