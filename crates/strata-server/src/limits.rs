//! Admission limits shared by every connection: open connections (total and
//! per client address) and bytes of request bodies in flight (total and per
//! address), as Cassandra's `ClientResourceLimits` keeps them.
//!
//! Threads: any; one short lock per admission, reservation or release.
//!
//! Invariants:
//! 1. A [`ConnectionSlot`] and a [`Reservation`] give back what they took when
//!    dropped, whatever path the connection or request ends on (error, client
//!    gone, shutdown): the counts never leak.
//! 2. [`Limits::try_reserve`] succeeds only when the bytes fit under both the
//!    global and the address's limit; [`Limits::force_reserve`] over-allocates
//!    (Cassandra's rule that a paused connection may always finish one
//!    request), and is called only by a connection with nothing else in
//!    flight or once usage fell below the limits.
//! 3. Every release wakes the connections waiting for room
//!    ([`Limits::released`]).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

pub struct Limits {
    max_connections: Option<usize>,
    max_connections_per_ip: Option<usize>,
    max_bytes: u64,
    max_bytes_per_ip: u64,
    state: Mutex<State>,
    /// Notified on every release of bytes (invariant 3).
    pub released: Notify,
}

#[derive(Default)]
struct State {
    connections: usize,
    bytes: u64,
    per_ip: HashMap<IpAddr, Endpoint>,
}

#[derive(Default)]
struct Endpoint {
    connections: usize,
    bytes: u64,
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Total(usize),
    PerIp(usize),
}

impl Limits {
    pub fn new(
        max_connections: Option<usize>,
        max_connections_per_ip: Option<usize>,
        max_bytes: u64,
        max_bytes_per_ip: u64,
    ) -> Limits {
        Limits {
            max_connections,
            max_connections_per_ip,
            max_bytes,
            max_bytes_per_ip,
            state: Mutex::new(State::default()),
            released: Notify::new(),
        }
    }

    /// Admits a new connection from `ip`, or says which limit it passes.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionSlot, Refusal> {
        let mut s = self.state.lock();
        if let Some(max) = self.max_connections {
            if s.connections >= max {
                return Err(Refusal::Total(max));
            }
        }
        let per_ip = s.per_ip.get(&ip).map_or(0, |e| e.connections);
        if let Some(max) = self.max_connections_per_ip {
            if per_ip >= max {
                return Err(Refusal::PerIp(max));
            }
        }
        s.connections += 1;
        s.per_ip.entry(ip).or_default().connections += 1;
        Ok(ConnectionSlot {
            limits: self.clone(),
            ip,
        })
    }

    /// Reserves `bytes` if they fit under both limits (invariant 2).
    pub fn try_reserve(
        self: &Arc<Self>,
        ip: IpAddr,
        bytes: u64,
        connection: &Arc<AtomicU64>,
    ) -> Option<Reservation> {
        let mut s = self.state.lock();
        let ip_bytes = s.per_ip.get(&ip).map_or(0, |e| e.bytes);
        if s.bytes + bytes > self.max_bytes || ip_bytes + bytes > self.max_bytes_per_ip {
            return None;
        }
        Some(self.take(&mut s, ip, bytes, connection))
    }

    /// Reserves `bytes` even past the limits (invariant 2).
    pub fn force_reserve(
        self: &Arc<Self>,
        ip: IpAddr,
        bytes: u64,
        connection: &Arc<AtomicU64>,
    ) -> Reservation {
        let mut s = self.state.lock();
        self.take(&mut s, ip, bytes, connection)
    }

    fn take(
        self: &Arc<Self>,
        s: &mut State,
        ip: IpAddr,
        bytes: u64,
        connection: &Arc<AtomicU64>,
    ) -> Reservation {
        s.bytes += bytes;
        s.per_ip.entry(ip).or_default().bytes += bytes;
        connection.fetch_add(bytes, Ordering::AcqRel);
        Reservation {
            limits: self.clone(),
            ip,
            bytes,
            connection: connection.clone(),
        }
    }

    /// Whether usage is below both limits for `ip` (a paused connection may
    /// read again).
    pub fn below_limits(&self, ip: IpAddr) -> bool {
        let s = self.state.lock();
        let ip_bytes = s.per_ip.get(&ip).map_or(0, |e| e.bytes);
        s.bytes < self.max_bytes && ip_bytes < self.max_bytes_per_ip
    }

    /// Bytes of request bodies in flight now.
    pub fn bytes_in_flight(&self) -> u64 {
        self.state.lock().bytes
    }

    pub fn connections(&self) -> usize {
        self.state.lock().connections
    }

    fn release_bytes(&self, ip: IpAddr, bytes: u64) {
        {
            let mut s = self.state.lock();
            s.bytes -= bytes;
            if let Some(e) = s.per_ip.get_mut(&ip) {
                e.bytes -= bytes;
                if e.bytes == 0 && e.connections == 0 {
                    s.per_ip.remove(&ip);
                }
            }
        }
        self.released.notify_waiters();
    }
}

/// An admitted connection; gives its place back when dropped (invariant 1).
pub struct ConnectionSlot {
    limits: Arc<Limits>,
    ip: IpAddr,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut s = self.limits.state.lock();
        s.connections -= 1;
        if let Some(e) = s.per_ip.get_mut(&self.ip) {
            e.connections -= 1;
            if e.connections == 0 && e.bytes == 0 {
                s.per_ip.remove(&self.ip);
            }
        }
    }
}

/// Bytes of one request in flight; released when dropped (invariant 1).
pub struct Reservation {
    limits: Arc<Limits>,
    ip: IpAddr,
    bytes: u64,
    connection: Arc<AtomicU64>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.connection.fetch_sub(self.bytes, Ordering::AcqRel);
        self.limits.release_bytes(self.ip, self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_counted_and_given_back() {
        let l = Arc::new(Limits::new(Some(3), Some(2), 100, 100));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let s1 = l.admit(a).unwrap();
        let _s2 = l.admit(a).unwrap();
        assert_eq!(l.admit(a).err(), Some(Refusal::PerIp(2)));
        let _s3 = l.admit(b).unwrap();
        assert_eq!(l.admit(b).err(), Some(Refusal::Total(3)));
        drop(s1);
        assert!(l.admit(a).is_ok());
    }

    #[test]
    fn bytes_fit_under_both_limits_and_are_released() {
        let l = Arc::new(Limits::new(None, None, 100, 60));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let conn = Arc::new(AtomicU64::new(0));
        let r1 = l.try_reserve(a, 50, &conn).unwrap();
        assert!(l.try_reserve(a, 20, &conn).is_none(), "per-address limit");
        let r2 = l.try_reserve(b, 50, &conn).unwrap();
        assert!(l.try_reserve(b, 1, &conn).is_none(), "global limit");
        assert!(!l.below_limits(b));
        let forced = l.force_reserve(b, 30, &conn);
        assert_eq!(l.bytes_in_flight(), 130);
        assert_eq!(conn.load(Ordering::Acquire), 130);
        drop((r1, r2, forced));
        assert_eq!(l.bytes_in_flight(), 0);
        assert_eq!(conn.load(Ordering::Acquire), 0);
        assert!(l.below_limits(a));
    }
}
