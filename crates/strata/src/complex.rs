//! Complex columns: non-frozen lists, sets, maps and user-defined types, stored
//! one cell per element (`data` invariant 5), as Cassandra stores them.
//!
//! Contract:
//! 1. Cell paths, never empty (an empty path is the column's complex
//!    deletion): a set element or map key is its ascending comparable encoding
//!    (`types::element_path`), so one key is one cell and cells sort in the
//!    type's order; a list element is the comparable encoding of a version-1
//!    UUID whose time orders the list (Cassandra's list cells are timeuuid
//!    keyed); a UDT field is its position as a big-endian `u16` (Cassandra's
//!    field cell path).
//! 2. Cell values: empty for a set element, the serialized value for a map
//!    entry, a list element or a UDT field.
//! 3. Reading: the live element cells of a column, in path order, make its
//!    value in Cassandra's serialized form; none makes `null` (an empty
//!    non-frozen collection reads as null, as in Cassandra).
//! 4. List paths are unique within the process and ordered as Cassandra orders
//!    them: appends from the clock forward, each after every earlier append;
//!    prepends from a reference time backwards (the later the prepend, the
//!    further back), each before every earlier element.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::data::{ColumnId, Row};
use crate::error::{Error, Result};
use crate::types::{self, CqlType, Value};

/// 100 ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
const UUID_EPOCH_OFFSET_TICKS: u64 = 0x01B2_1DD2_1381_4000;
/// Cassandra's list reference time (2010-01-01), in Unix milliseconds:
/// prepends count back from it as far as the clock is past it.
const PREPEND_REFERENCE_MILLIS: u64 = 1_262_304_000_000;

static LAST_APPEND: AtomicU64 = AtomicU64::new(0);
static LAST_PREPEND: AtomicU64 = AtomicU64::new(u64::MAX);

/// Clock sequence and node of this process's list paths: random, so two
/// processes (or two runs) writing in the same 100 ns never share a path.
fn node() -> [u8; 8] {
    static NODE: OnceLock<[u8; 8]> = OnceLock::new();
    *NODE.get_or_init(|| {
        let mut b = types::random_bytes::<8>();
        b[0] = (b[0] & 0x3f) | 0x80; // RFC 4122 variant
        b
    })
}

fn unix_ticks(now_micros: i64) -> u64 {
    (now_micros.max(0) as u64)
        .saturating_mul(10)
        .saturating_add(UUID_EPOCH_OFFSET_TICKS)
}

/// The path of a list cell whose UUID time is `ticks`.
fn list_path(ticks: u64) -> Vec<u8> {
    let ticks = ticks & 0x0FFF_FFFF_FFFF_FFFF;
    let mut u = [0u8; 16];
    u[0..4].copy_from_slice(&(ticks as u32).to_be_bytes());
    u[4..6].copy_from_slice(&((ticks >> 32) as u16).to_be_bytes());
    u[6..8].copy_from_slice(&((((ticks >> 48) as u16) & 0x0FFF) | 0x1000).to_be_bytes());
    u[8..].copy_from_slice(&node());
    types::element_path(&Value::TimeUuid(u))
}

/// Reserves `n` consecutive ticks from `counter`: after every earlier
/// reservation when `forward`, before every one otherwise. Returns the first.
fn reserve(counter: &AtomicU64, want: u64, n: u64, forward: bool) -> u64 {
    let mut first = 0;
    let _ = counter.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
        if forward {
            first = want.max(last.saturating_add(1));
            Some(first.saturating_add(n.saturating_sub(1)))
        } else {
            first = want.min(last).saturating_sub(n);
            Some(first)
        }
    });
    first
}

/// Paths for `n` elements appended at `now_micros`, in list order.
pub fn append_paths(now_micros: i64, n: usize) -> Vec<Vec<u8>> {
    let first = reserve(&LAST_APPEND, unix_ticks(now_micros), n as u64, true);
    (0..n as u64).map(|i| list_path(first + i)).collect()
}

/// Paths for `n` elements prepended at `now_micros`, in list order.
pub fn prepend_paths(now_micros: i64, n: usize) -> Vec<Vec<u8>> {
    let reference = unix_ticks(PREPEND_REFERENCE_MILLIS as i64 * 1000);
    let now = unix_ticks(now_micros);
    let want = reference.saturating_sub(now.saturating_sub(reference));
    let first = reserve(&LAST_PREPEND, want, n as u64, false);
    (0..n as u64).map(|i| list_path(first + i)).collect()
}

/// A UDT field's cell path.
pub fn field_path(position: usize) -> Vec<u8> {
    (position as u16).to_be_bytes().to_vec()
}

/// The element cells (path, value) of a whole value of complex type `ty`,
/// written at `now_micros` (list paths). Null UDT fields have no cell.
pub fn element_cells(ty: &CqlType, v: &Value, now_micros: i64) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    Ok(match (ty, v) {
        (CqlType::Set { .. }, Value::Set(items)) => items
            .iter()
            .map(|e| (types::element_path(e), Vec::new()))
            .collect(),
        (CqlType::Map { .. }, Value::Map(entries)) => entries
            .iter()
            .map(|(k, v)| (types::element_path(k), types::serialize(v)))
            .collect(),
        (CqlType::List { .. }, Value::List(items)) => append_paths(now_micros, items.len())
            .into_iter()
            .zip(items.iter().map(types::serialize))
            .collect(),
        (CqlType::Udt { .. }, Value::Udt(fields)) => fields
            .iter()
            .enumerate()
            .filter_map(|(i, (_, f))| f.as_ref().map(|f| (field_path(i), types::serialize(f))))
            .collect(),
        _ => {
            return Err(Error::InvalidInput(format!(
                "a {} value is not a {}",
                v.kind_name(),
                ty.name()
            )))
        }
    })
}

/// The serialized value of a complex column from its live element cells
/// (path, value) in path order; `None` when there are none (contract 3).
pub fn assemble<'a>(
    ty: &CqlType,
    cells: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> Result<Option<Vec<u8>>> {
    let cells: Vec<(&[u8], &[u8])> = cells.collect();
    if cells.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    match ty {
        CqlType::Set { element, .. } | CqlType::Map { key: element, .. } => {
            let is_map = matches!(ty, CqlType::Map { .. });
            out.extend_from_slice(&(cells.len() as i32).to_be_bytes());
            for (path, value) in cells {
                let mut p = path;
                let key = types::decode_comparable(element, false, &mut p)?;
                put(&mut out, &types::serialize(&key));
                if is_map {
                    put(&mut out, value);
                }
            }
        }
        CqlType::List { .. } => {
            out.extend_from_slice(&(cells.len() as i32).to_be_bytes());
            for (_, value) in cells {
                put(&mut out, value);
            }
        }
        CqlType::Udt { def, .. } => {
            let mut fields: Vec<Option<&[u8]>> = vec![None; def.fields.len()];
            for (path, value) in cells {
                let position = <[u8; 2]>::try_from(path)
                    .map(|p| u16::from_be_bytes(p) as usize)
                    .map_err(|_| {
                        Error::InvalidInput("a UDT field cell path is not 2 bytes".into())
                    })?;
                // A field beyond the type's (a cell of a type changed since
                // without it) is not part of the value.
                if let Some(slot) = fields.get_mut(position) {
                    *slot = Some(value);
                }
            }
            if fields.iter().all(Option::is_none) {
                return Ok(None);
            }
            for f in fields {
                match f {
                    Some(b) => put(&mut out, b),
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
        }
        _ => {
            return Err(Error::InvalidInput(format!(
                "{} is not a complex type",
                ty.name()
            )))
        }
    }
    Ok(Some(out))
}

/// The (path, value) of each element of column `id` in `row`, a live view,
/// as [`assemble`] takes them.
pub fn paths_and_values(row: &Row, id: ColumnId) -> impl Iterator<Item = (&[u8], &[u8])> {
    row.elements(id)
        .filter_map(|c| Some((c.path.as_deref()?, &c.value[..])))
}

fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
    out.extend_from_slice(b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn list_of_int() -> CqlType {
        CqlType::List {
            element: Arc::new(CqlType::Int),
            frozen: false,
        }
    }

    #[test]
    fn appends_follow_appends_and_prepends_precede_everything() {
        let now = 1_800_000_000_000_000;
        let a = append_paths(now, 3);
        let b = append_paths(now, 2); // same clock: still after
        let p1 = prepend_paths(now, 2);
        let p2 = prepend_paths(now, 2); // a later prepend goes further back
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a[2] < b[0] && b[0] < b[1]);
        assert!(p1[0] < p1[1] && p1[1] < a[0]);
        assert!(p2[1] < p1[0]);
        assert!(a.iter().chain(&p1).all(|p| !p.is_empty()));
    }

    #[test]
    fn values_round_trip_through_element_cells() {
        let map = CqlType::Map {
            key: Arc::new(CqlType::Text),
            value: Arc::new(CqlType::Int),
            frozen: false,
        };
        let set = CqlType::Set {
            element: Arc::new(CqlType::Int),
            frozen: false,
        };
        let cases = [
            (
                map,
                Value::Map(vec![
                    (Value::Text(String::new()), Value::Int(1)),
                    (Value::Text("b".into()), Value::Int(2)),
                ]),
            ),
            (set, Value::Set(vec![Value::Int(-5), Value::Int(7)])),
            (
                list_of_int(),
                Value::List(vec![Value::Int(3), Value::Int(3)]),
            ),
        ];
        for (ty, v) in cases {
            let cells = element_cells(&ty, &v, 1_800_000_000_000_000).unwrap();
            assert!(cells.iter().all(|(p, _)| !p.is_empty()));
            let bytes = assemble(&ty, cells.iter().map(|(p, v)| (&p[..], &v[..])))
                .unwrap()
                .unwrap();
            assert_eq!(types::deserialize(&ty, &bytes).unwrap(), v);
        }
        assert_eq!(assemble(&list_of_int(), std::iter::empty()).unwrap(), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Cells read back from a damaged file: arbitrary paths and values
        /// never panic, and a column put together is a value its type
        /// reads back or an error, never garbage bytes.
        #[test]
        fn arbitrary_cells_assemble_or_fail_cleanly(
            cells in proptest::collection::vec(
                (
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
                ),
                0..6,
            )
        ) {
            let text = Arc::new(CqlType::Text);
            let int = Arc::new(CqlType::Int);
            let udt = crate::types::composite::udt(
                "ks",
                "u",
                &[("a", CqlType::Int), ("b", CqlType::Text)],
                false,
            );
            let types = [
                list_of_int(),
                CqlType::Set { element: Arc::clone(&text), frozen: false },
                CqlType::Map { key: Arc::clone(&int), value: Arc::clone(&text), frozen: false },
                udt,
            ];
            for ty in &types {
                if let Ok(Some(bytes)) = assemble(ty, cells.iter().map(|(p, v)| (&p[..], &v[..]))) {
                    // The framing is right whatever the element bytes are.
                    let _ = types::deserialize(ty, &bytes);
                }
            }
        }
    }
}
