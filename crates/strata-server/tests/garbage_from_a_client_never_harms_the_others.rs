//! Clients sending garbage (an HTTP request, random bytes before and after
//! STARTUP, in v4 and in v5 segments) get protocol errors or a closed
//! connection; none crashes the server, and a well-behaved client on the
//! side is answered after each. Seeded, so every run sends the same bytes.

mod common;

use common::{Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::ServerConfig;

/// xorshift64*: the test's only randomness, seeded.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_from_a_client_never_harms_the_others() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut good = Client::connect(server.addr, 4).await;
    assert!(good.startup(&[]).await.is(Opcode::Ready));

    let mut http = Client::connect(server.addr, 4).await;
    http.write_raw(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let f = http.recv().await.expect("an error before the close");
    assert_eq!(f.error().0, 0x0A);
    assert!(http.recv().await.is_none());

    let mut rng = Rng(0x5eed_cafe);
    for round in 0..200 {
        let version = [3u8, 4, 5][round % 3];
        let mut c = Client::connect(server.addr, version).await;
        if round % 2 == 0 {
            assert!(c.startup(&[]).await.is(Opcode::Ready));
        }
        let n = 1 + (rng.next() % 300) as usize;
        let mut junk = rng.bytes(n);
        if round % 4 == 1 {
            // A plausible header with a random opcode, flags and length.
            junk.resize(junk.len().max(9), 0);
            junk[0] = version;
        }
        // The server may already have closed on the first bad byte.
        let _ = c.write_raw(&junk).await;
        drop(c);
        assert!(
            good.request(Opcode::Options, &[])
                .await
                .is(Opcode::Supported),
            "round {round}"
        );
    }
    assert_eq!(server.stats.snapshot().request_bytes_in_flight, 0);
    server.stop().await;
}
