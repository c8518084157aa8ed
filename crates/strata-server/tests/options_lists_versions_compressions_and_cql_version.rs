//! OPTIONS answers SUPPORTED with the options Cassandra 5 advertises (CQL
//! version, compressions, protocol versions), in the version the client
//! used, on the client's stream id, before and after STARTUP.

mod common;

use common::{Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::wire::Reader;
use strata_server::ServerConfig;

fn multimap(body: &[u8]) -> Vec<(String, Vec<String>)> {
    let mut r = Reader::new(body);
    let n = r.short().unwrap();
    (0..n)
        .map(|_| (r.string().unwrap().to_string(), r.string_list().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_lists_versions_compressions_and_cql_version() {
    let server = TestServer::start(ServerConfig::default()).await;
    for version in [3u8, 4, 5] {
        let mut c = Client::connect(server.addr, version).await;
        c.send(17, Opcode::Options, &[]).await;
        let f = c.recv().await.expect("SUPPORTED");
        assert_eq!(f.version_byte, 0x80 | version);
        assert_eq!(f.stream, 17);
        assert!(f.is(Opcode::Supported));
        let mut m = multimap(&f.body);
        m.sort();
        assert_eq!(
            m,
            vec![
                (
                    "COMPRESSION".to_string(),
                    vec!["snappy".to_string(), "lz4".to_string()]
                ),
                ("CQL_VERSION".to_string(), vec!["3.4.7".to_string()]),
                (
                    "PROTOCOL_VERSIONS".to_string(),
                    vec!["3/v3".to_string(), "4/v4".to_string(), "5/v5".to_string()]
                ),
            ]
        );
        // After STARTUP (v5: framed), OPTIONS still answers.
        assert!(c.startup(&[]).await.is(Opcode::Ready));
        let f = c.request(Opcode::Options, &[]).await;
        assert!(f.is(Opcode::Supported));
        assert_eq!(f.version(), version);
    }
    server.stop().await;
}
