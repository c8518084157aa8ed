//! Counter cells (`data.rs` invariant 6): the value of a counter column is a
//! *context*, a set of shards, one per writer id, laid out as Cassandra's
//! `CounterContext` lays it out so the bytes can cross to Cassandra
//! unchanged:
//!
//! ```text
//! header: i16 n, then n i16 indexes of the body's local shards
//! body:   shards sorted by id, each: id (16 bytes), clock (i64), count (i64)
//! ```
//! (big-endian). The counter's value is the sum of the counts, wrapping as
//! Cassandra's `long` addition does.
//!
//! Contract:
//! 1. A stored context holds only *global* shards. Two global shards of one
//!    id merge to the higher clock (equal clocks: the larger count), so
//!    merging is commutative, associative and idempotent: a commit-log record
//!    replayed over the sstable that already holds it changes nothing.
//! 2. A *local* shard is a pending increment ([`pending`]): a statement's
//!    delta before it is applied. Two local shards of one id add up (two
//!    increments of one counter in one batch), and a global shard beats a
//!    local one. The write path turns every local shard into a global one
//!    ([`resolve`]) under the partition's lock before the update reaches the
//!    table, so no local shard is ever stored.
//! 3. Cassandra's legacy *remote* shards (negative header indexes, before 2.1)
//!    are refused as a decode error, as are lengths that are not a header
//!    plus whole shards: a malformed context never panics a reader.
//! 4. A merged cell carries the newest of its shards' timestamps, so a row
//!    or partition deletion between two writers' shards does not shadow the
//!    older one once they have merged. A table's shards are therefore all of
//!    one writer, the table's UUID (`TableSchema::update_counters`), whose
//!    shards supersede each other by clock; several writers meet only in
//!    sstables imported from another directory.

use crate::encoding::{DecodeError, DecodeResult};

/// Bytes of one shard: id, clock, count.
pub const SHARD_BYTES: usize = 32;

/// One writer's part of a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub id: [u8; 16],
    pub clock: i64,
    pub count: i64,
    /// A pending increment (contract 2), not a stored shard.
    pub local: bool,
}

fn be_i64(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    i64::from_be_bytes(a)
}

/// The shards of `ctx`, in id order.
pub fn decode(ctx: &[u8]) -> DecodeResult<Vec<Shard>> {
    let Some(head) = ctx.get(..2) else {
        return Err(DecodeError("counter context shorter than its header"));
    };
    let n = i16::from_be_bytes([head[0], head[1]]);
    if n < 0 {
        return Err(DecodeError("counter context header count is negative"));
    }
    let header_end = 2 + 2 * n as usize;
    let Some(indexes) = ctx.get(2..header_end) else {
        return Err(DecodeError("counter context header runs past its end"));
    };
    let body = &ctx[header_end..];
    if !body.len().is_multiple_of(SHARD_BYTES) {
        return Err(DecodeError("counter context body is not whole shards"));
    }
    let mut shards: Vec<Shard> = body
        .chunks_exact(SHARD_BYTES)
        .map(|s| {
            let mut id = [0u8; 16];
            id.copy_from_slice(&s[..16]);
            Shard {
                id,
                clock: be_i64(&s[16..24]),
                count: be_i64(&s[24..32]),
                local: false,
            }
        })
        .collect();
    for i in indexes.chunks_exact(2) {
        let at = i16::from_be_bytes([i[0], i[1]]);
        if at < 0 {
            return Err(DecodeError(
                "counter context has a remote shard (written before Cassandra 2.1)",
            ));
        }
        match shards.get_mut(at as usize) {
            Some(s) => s.local = true,
            None => return Err(DecodeError("counter context header names a missing shard")),
        }
    }
    if shards.windows(2).any(|w| w[0].id >= w[1].id) {
        return Err(DecodeError("counter context shards are not in id order"));
    }
    Ok(shards)
}

/// The context of `shards`, which must be in strictly increasing id order.
pub fn encode(shards: &[Shard]) -> Vec<u8> {
    let locals: Vec<usize> = (0..shards.len()).filter(|&i| shards[i].local).collect();
    let mut out = Vec::with_capacity(2 + 2 * locals.len() + SHARD_BYTES * shards.len());
    out.extend_from_slice(&(locals.len() as i16).to_be_bytes());
    for i in locals {
        out.extend_from_slice(&(i as i16).to_be_bytes());
    }
    for s in shards {
        out.extend_from_slice(&s.id);
        out.extend_from_slice(&s.clock.to_be_bytes());
        out.extend_from_slice(&s.count.to_be_bytes());
    }
    out
}

/// A pending increment of `delta` by writer `id` (contract 2).
pub fn pending(id: [u8; 16], delta: i64) -> Vec<u8> {
    encode(&[Shard {
        id,
        clock: 1,
        count: delta,
        local: true,
    }])
}

/// The counter's value: the sum of its counts, wrapping.
pub fn total(ctx: &[u8]) -> DecodeResult<i64> {
    Ok(decode(ctx)?
        .iter()
        .fold(0i64, |acc, s| acc.wrapping_add(s.count)))
}

/// Whether `ctx` still holds a pending increment (contract 2): a stored
/// context's header lists no shard, so any entry there (or a header that
/// does not parse) means it is not one to store.
pub fn has_pending(ctx: &[u8]) -> bool {
    ctx.get(..2) != Some(&[0, 0])
}

/// The one shard of two with the same id that a merge keeps (contract 1, 2).
fn merge_shard(a: Shard, b: Shard) -> Shard {
    match (a.local, b.local) {
        (true, true) => Shard {
            clock: a.clock.wrapping_add(b.clock),
            count: a.count.wrapping_add(b.count),
            ..a
        },
        (false, true) => a,
        (true, false) => b,
        (false, false) => {
            if (a.clock, a.count) >= (b.clock, b.count) {
                a
            } else {
                b
            }
        }
    }
}

/// Two contexts merged shard by shard; `None` if either does not decode.
pub fn merge(a: &[u8], b: &[u8]) -> Option<Vec<u8>> {
    let (a, b) = (decode(a).ok()?, decode(b).ok()?);
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.id.cmp(&y.id) {
                std::cmp::Ordering::Less => a.next(),
                std::cmp::Ordering::Greater => b.next(),
                std::cmp::Ordering::Equal => match (a.next(), b.next()) {
                    (Some(x), Some(y)) => Some(merge_shard(x, y)),
                    _ => None,
                },
            },
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => break,
        };
        out.extend(next);
    }
    Some(encode(&out))
}

/// `pending`'s increments made stored shards (contract 2): each local shard
/// becomes a global shard of its writer whose count is `current`'s count for
/// that writer plus the increment, and whose clock is above `current`'s for
/// that writer and at least `clock`. `current` is the counter as a read sees
/// it now (after deletions), `None` when it has no live value: an increment
/// after the counter's row was deleted starts from zero, and its clock, above
/// every earlier one of its writer, makes it win over the shadowed shard
/// wherever the two meet.
pub fn resolve(pending: &[u8], current: Option<&[u8]>, clock: i64) -> DecodeResult<Vec<u8>> {
    let before = match current {
        Some(c) => decode(c)?,
        None => Vec::new(),
    };
    let shards: Vec<Shard> = decode(pending)?
        .into_iter()
        .map(|s| {
            if !s.local {
                return s;
            }
            let mine = before.iter().find(|m| m.id == s.id && !m.local);
            let (before_clock, before_count) = mine.map_or((0, 0), |m| (m.clock, m.count));
            Shard {
                id: s.id,
                clock: clock.max(before_clock.saturating_add(1)),
                count: before_count.wrapping_add(s.count),
                local: false,
            }
        })
        .collect();
    Ok(encode(&shards))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn global(id: u8, clock: i64, count: i64) -> Vec<u8> {
        encode(&[Shard {
            id: [id; 16],
            clock,
            count,
            local: false,
        }])
    }

    #[test]
    fn a_global_shard_keeps_the_higher_clock_and_replay_changes_nothing() {
        let old = global(1, 5, 10);
        let new = global(1, 6, 3);
        assert_eq!(merge(&old, &new).unwrap(), new);
        assert_eq!(merge(&new, &old).unwrap(), new);
        // A record replayed over the file that holds it.
        assert_eq!(merge(&new, &new).unwrap(), new);
        assert_eq!(total(&new).unwrap(), 3);
    }

    #[test]
    fn shards_of_different_writers_add_up() {
        let m = merge(&global(2, 1, 7), &global(1, 9, 5)).unwrap();
        assert_eq!(total(&m).unwrap(), 12);
        assert_eq!(decode(&m).unwrap()[0].id, [1; 16]);
    }

    #[test]
    fn pending_increments_add_up_then_resolve_against_the_current_value() {
        let id = [3; 16];
        let p = merge(&pending(id, 2), &pending(id, 5)).unwrap();
        assert!(has_pending(&p));
        assert_eq!(total(&p).unwrap(), 7);
        let current = global(3, 40, 100);
        let stored = resolve(&p, Some(&current), 10).unwrap();
        let s = decode(&stored).unwrap();
        assert_eq!((s[0].clock, s[0].count, s[0].local), (41, 107, false));
        assert!(!has_pending(&stored));
        // No current value (never written, or deleted): from zero, at the clock.
        let fresh = decode(&resolve(&p, None, 10).unwrap()).unwrap();
        assert_eq!((fresh[0].clock, fresh[0].count), (10, 7));
        // Another writer's shard is not this one's.
        let other = decode(&resolve(&pending([4; 16], 1), Some(&current), 1).unwrap()).unwrap();
        assert_eq!((other[0].clock, other[0].count), (1, 1));
    }

    #[test]
    fn increments_wrap_as_cassandra_longs_do() {
        let p = pending([1; 16], 1);
        let stored = resolve(&p, Some(&global(1, 1, i64::MAX)), 2).unwrap();
        assert_eq!(total(&stored).unwrap(), i64::MIN);
    }

    #[test]
    fn malformed_contexts_are_refused() {
        assert!(decode(&[]).is_err());
        assert!(decode(&[0, 0, 1]).is_err());
        assert!(decode(&[0xff, 0xff]).is_err());
        let mut remote = vec![0, 1, 0x80, 0];
        remote.extend_from_slice(&global(1, 1, 1)[2..]);
        assert!(decode(&remote).is_err());
        let mut unordered = global(2, 1, 1);
        unordered.extend_from_slice(&global(1, 1, 1)[2..]);
        assert!(decode(&unordered).is_err());
        assert!(merge(&[1], &global(1, 1, 1)).is_none());
    }

    fn shard() -> impl Strategy<Value = Shard> {
        (0u8..4, 0i64..4, -3i64..4, any::<bool>()).prop_map(|(id, clock, count, local)| Shard {
            id: [id; 16],
            clock,
            count,
            local,
        })
    }

    fn context() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(shard(), 0..4).prop_map(|mut v| {
            v.sort_by_key(|s| s.id);
            v.dedup_by_key(|s| s.id);
            encode(&v)
        })
    }

    proptest! {
        #[test]
        fn merge_is_commutative_associative_and_idempotent(a in context(), b in context(), c in context()) {
            let ab = merge(&a, &b).unwrap();
            prop_assert_eq!(&ab, &merge(&b, &a).unwrap());
            prop_assert_eq!(
                merge(&ab, &c).unwrap(),
                merge(&a, &merge(&b, &c).unwrap()).unwrap()
            );
            if !has_pending(&a) {
                prop_assert_eq!(merge(&a, &a).unwrap(), a.clone());
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode(&bytes);
            let _ = total(&bytes);
            let _ = merge(&bytes, &bytes);
            let _ = resolve(&bytes, Some(&bytes), 1);
        }
    }
}
