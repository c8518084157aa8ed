//! With the executor's PasswordAuthenticator: STARTUP answers AUTHENTICATE
//! with Cassandra's class name; until AUTH_RESPONSE succeeds every other
//! request is refused as Cassandra refuses it ("expecting SASL_RESPONSE");
//! a malformed SASL PLAIN token and wrong credentials are Bad credentials
//! (0x0100) and the connection may try again; the executor is the one that
//! checks the password.

mod common;

use common::{Client, TestServer};
use strata::query::Authenticator;
use strata_server::frame::Opcode;
use strata_server::request::encode;
use strata_server::wire::Reader;
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_authentication_handshake() {
    let server = TestServer::start_with(ServerConfig::default(), Authenticator::Password).await;
    for version in [4u8, 5] {
        let mut c = Client::connect(server.addr, version).await;
        let f = c.startup(&[]).await;
        assert!(f.is(Opcode::Authenticate), "v{version}");
        let mut r = Reader::new(&f.body);
        assert_eq!(
            r.string().unwrap(),
            "org.apache.cassandra.auth.PasswordAuthenticator"
        );

        let q = encode::query(version, "SELECT * FROM system.local", &encode::one(), false);
        let f = c.request(Opcode::Query, &q).await;
        assert_eq!(
            f.error(),
            (
                0x0A,
                "Unexpected message QUERY, expecting SASL_RESPONSE".to_string()
            )
        );
        let f = c
            .request(
                Opcode::AuthResponse,
                &encode::auth_response(Some(b"\0user\0")),
            )
            .await;
        assert_eq!(f.error(), (0x0100, "Password must not be null".to_string()));
        let f = c
            .request(Opcode::AuthResponse, &encode::auth_response(None))
            .await;
        assert_eq!(f.error().0, 0x0100);
        // Wrong credentials: the executor's verdict, in its words.
        let token = b"\0cassandra\0not-the-password";
        let f = c
            .request(Opcode::AuthResponse, &encode::auth_response(Some(token)))
            .await;
        let expected = server
            .executor
            .authenticate("cassandra", "not-the-password")
            .unwrap_err();
        assert_eq!(f.error(), (0x0100, expected.message));
        // Still authenticating: a query is still refused.
        let f = c.request(Opcode::Query, &q).await;
        assert_eq!(f.error().0, 0x0A);
    }
    server.stop().await;
}
