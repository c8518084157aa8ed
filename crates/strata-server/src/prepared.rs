//! The prepared-statement cache shared by every connection: statement id to
//! the executor's [`Prepared`], bounded in bytes, least recently used first
//! out.
//!
//! Owns nothing durable: after a restart the cache is empty, an EXECUTE of an
//! id it lacks is answered Unprepared (0x2500) with the id, and the driver
//! prepares the statement again, getting the same id (the executor derives
//! it from the keyspace and the text).
//!
//! Threads: any; one short lock per lookup or insert.
//!
//! Invariants:
//! 1. The estimated size of the statements held never exceeds the capacity;
//!    a statement larger than the whole capacity is refused (Cassandra's
//!    "Prepared statement of size ... is larger than allowed maximum").
//! 2. A lookup refreshes the entry's recency; eviction takes the entry least
//!    recently prepared or executed.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use strata::query::{ColumnSpec, Prepared, QueryError};

pub struct PreparedCache {
    lru: Lru<Arc<Prepared>>,
}

/// What one statement is counted as: its text, its keyspace and its column
/// specs, plus a fixed overhead for the parsed tree and the map entry.
fn estimate_bytes(p: &Prepared) -> usize {
    let specs = |cols: &[ColumnSpec]| -> usize {
        cols.iter()
            .map(|c| 64 + c.keyspace.len() + c.table.len() + c.name.len())
            .sum()
    };
    // The parsed statement is typically a few times the text.
    512 + 4 * p.text.len()
        + p.keyspace.as_ref().map_or(0, String::len)
        + specs(&p.bind)
        + specs(&p.result.columns)
}

impl PreparedCache {
    pub fn new(capacity_bytes: usize) -> PreparedCache {
        PreparedCache {
            lru: Lru::new(capacity_bytes),
        }
    }

    /// The statement with `id`, refreshed as most recently used.
    pub fn get(&self, id: &[u8]) -> Option<Arc<Prepared>> {
        let id: [u8; 16] = id.try_into().ok()?;
        self.lru.get(&id)
    }

    /// Keeps `p`, evicting the least recently used past the capacity.
    pub fn insert(&self, p: Prepared) -> Result<Arc<Prepared>, QueryError> {
        let size = estimate_bytes(&p);
        let id = p.id;
        let p = Arc::new(p);
        if !self.lru.insert(id, p.clone(), size) {
            return Err(QueryError::invalid(format!(
                "Prepared statement of size {size} bytes is larger than allowed maximum of {} bytes.",
                self.lru.capacity_bytes
            )));
        }
        Ok(p)
    }

    pub fn len(&self) -> usize {
        self.lru.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A byte-bounded least-recently-used map from 16-byte ids (invariants 1, 2).
struct Lru<V> {
    capacity_bytes: usize,
    inner: Mutex<Inner<V>>,
}

struct Inner<V> {
    map: HashMap<[u8; 16], Entry<V>>,
    /// Recency tick -> id; the first is the least recently used.
    order: BTreeMap<u64, [u8; 16]>,
    tick: u64,
    used_bytes: usize,
}

struct Entry<V> {
    value: V,
    tick: u64,
    size_bytes: usize,
}

impl<V: Clone> Lru<V> {
    fn new(capacity_bytes: usize) -> Lru<V> {
        Lru {
            capacity_bytes,
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                order: BTreeMap::new(),
                tick: 0,
                used_bytes: 0,
            }),
        }
    }

    fn get(&self, id: &[u8; 16]) -> Option<V> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        inner.tick += 1;
        let tick = inner.tick;
        let e = inner.map.get_mut(id)?;
        inner.order.remove(&e.tick);
        e.tick = tick;
        inner.order.insert(tick, *id);
        Some(e.value.clone())
    }

    /// False (and nothing kept) when one entry is larger than the capacity.
    fn insert(&self, id: [u8; 16], value: V, size_bytes: usize) -> bool {
        if size_bytes > self.capacity_bytes {
            return false;
        }
        let mut g = self.inner.lock();
        let inner = &mut *g;
        inner.tick += 1;
        let tick = inner.tick;
        if let Some(old) = inner.map.remove(&id) {
            inner.order.remove(&old.tick);
            inner.used_bytes -= old.size_bytes;
        }
        while inner.used_bytes + size_bytes > self.capacity_bytes {
            let Some((_, victim)) = inner.order.pop_first() else {
                break;
            };
            if let Some(e) = inner.map.remove(&victim) {
                inner.used_bytes -= e.size_bytes;
            }
        }
        inner.map.insert(
            id,
            Entry {
                value,
                tick,
                size_bytes,
            },
        );
        inner.order.insert(tick, id);
        inner.used_bytes += size_bytes;
        true
    }

    fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    #[cfg(test)]
    fn used_bytes(&self) -> usize {
        self.inner.lock().used_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> [u8; 16] {
        [n; 16]
    }

    #[test]
    fn bounded_by_bytes_evicting_the_least_recently_used() {
        let lru: Lru<u8> = Lru::new(300);
        assert!(lru.insert(id(1), 1, 100));
        assert!(lru.insert(id(2), 2, 100));
        assert!(lru.insert(id(3), 3, 100));
        // Touch 1: 2 is now the least recently used.
        assert_eq!(lru.get(&id(1)), Some(1));
        assert!(lru.insert(id(4), 4, 100));
        assert_eq!(lru.get(&id(2)), None);
        assert_eq!(lru.get(&id(1)), Some(1));
        assert_eq!(lru.get(&id(3)), Some(3));
        assert!(lru.used_bytes() <= 300);
        // Re-inserting an id replaces it without double counting.
        assert!(lru.insert(id(4), 44, 100));
        assert_eq!(lru.used_bytes(), 300);
        assert_eq!(lru.len(), 3);
        // Larger than everything: refused, nothing evicted.
        assert!(!lru.insert(id(9), 9, 301));
        assert_eq!(lru.len(), 3);
    }
}
