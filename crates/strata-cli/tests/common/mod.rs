//! Helpers shared by the CLI's integration tests: run the `strata` binary on a
//! data directory, insist on success, read its JSON, list a table's sstables.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `strata --data-dir DIR ARGS...` to completion.
pub fn strata(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .output()
        .expect("run strata")
}

/// Stdout and stderr, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The stdout of a command that must have succeeded.
pub fn ok(out: &Output, what: &str) -> Vec<u8> {
    assert!(out.status.success(), "{what}: {}", text(out));
    out.stdout.clone()
}

pub fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("JSON output")
}

/// The sstable files of a table directory, sorted.
pub fn sstables(table_dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(table_dir)
        .expect("table dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("-Data.db"))
        .collect();
    v.sort();
    v
}

/// Runs `strata ARGS...` with no data directory (the benches and single-file
/// tools, which refuse `--data-dir`).
pub fn strata_without_dir(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("run strata")
}

/// Reads a JSON file a command wrote.
pub fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("JSON file written");
    serde_json::from_str(&text).expect("valid JSON")
}

/// Where a bench run in a test writes: its `--json` file, `--charts` and
/// `--dir` (created), under one temporary directory that lives as long as this.
pub struct BenchScratch {
    _tmp: tempfile::TempDir,
    pub json: PathBuf,
    pub charts: PathBuf,
    pub work: PathBuf,
}

pub fn bench_scratch(json_name: &str) -> BenchScratch {
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    BenchScratch {
        json: tmp.path().join(json_name),
        charts: tmp.path().join("charts"),
        work,
        _tmp: tmp,
    }
}

/// Starts `strata serve --data-dir DIR EXTRA...` and reads the address it
/// printed as its first line.
pub fn serve(dir: &Path, extra: &[&str]) -> (std::process::Child, std::net::SocketAddr) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("serve")
        .arg("--data-dir")
        .arg(dir)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn strata serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let addr = line
        .trim()
        .strip_prefix("listening for CQL clients on ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .parse()
        .expect("address");
    (child, addr)
}

/// SIGTERM to a `strata serve`, which must then exit 0; its stderr.
pub fn stop_server(mut child: std::process::Child) -> String {
    use std::io::Read;
    // SAFETY: signalling a child process the test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("wait");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "exit {status:?}: {err}");
    err
}

/// A server configuration with authentication and TLS on, in a directory of
/// its own (never the data directory): `strata.yaml` naming
/// `PasswordAuthenticator` and `client_encryption_options` (TLS required),
/// the server's key and certificate chain (`keystore.pem`), and the CA
/// clients trust (`ca.pem`). The server certificate names `localhost` and
/// `127.0.0.1`, so clients may verify the host name.
pub struct Secure {
    _dir: tempfile::TempDir,
    pub config: PathBuf,
    pub ca: PathBuf,
}

pub fn secure_config() -> Secure {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Distinct names (else OpenSSL takes the server's certificate for a
    // self-signed one) and the key usages strict verifiers ask of a CA.
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "strata test CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
    let key = KeyPair::generate().expect("server key");
    let mut params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .expect("server params");
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.use_authority_key_identifier_extension = true;
    let cert = params
        .signed_by(&key, &ca, &ca_key)
        .expect("server certificate");
    std::fs::write(
        dir.path().join("keystore.pem"),
        format!("{}{}{}", key.serialize_pem(), cert.pem(), ca.pem()),
    )
    .expect("keystore");
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, ca.pem()).expect("ca.pem");
    let config = dir.path().join("strata.yaml");
    std::fs::write(
        &config,
        "authenticator: PasswordAuthenticator\n\
         client_encryption_options:\n  enabled: true\n  optional: false\n  keystore: keystore.pem\n",
    )
    .expect("strata.yaml");
    Secure {
        _dir: dir,
        config,
        ca: ca_path,
    }
}

/// What a driver program printed, and the servers' stderr.
pub struct DriverRun {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub server_stderr: String,
}

/// Runs a driver program (`client`, arguments but the address already set;
/// HOST and PORT are appended) against `strata serve --data-dir DIR
/// --port 0 EXTRA...`. When the program prints a line `ready for restart`,
/// the server is stopped and a new one started on the same directory and
/// port, and the program is sent a line on stdin to go on.
pub fn run_driver_with_restart(
    mut client: Command,
    dir: &Path,
    extra: &[&str],
    client_args: &[&str],
) -> DriverRun {
    use std::io::{BufRead, Read, Write};
    let mut first: Vec<&str> = vec!["--port", "0"];
    first.extend_from_slice(extra);
    let (server, addr) = serve(dir, &first);
    let port = addr.port().to_string();
    let mut child = client
        .arg(addr.ip().to_string())
        .arg(&port)
        .args(client_args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the driver program");
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    let stderr_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr_pipe.read_to_string(&mut s);
        s
    });
    let mut stdout = String::new();
    let mut server_stderr = String::new();
    let mut server = Some(server);
    let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("driver stdout") == 0 {
            break;
        }
        stdout.push_str(&line);
        if line.trim() == "ready for restart" {
            if let Some(s) = server.take() {
                server_stderr.push_str(&stop_server(s));
            }
            let mut again: Vec<&str> = vec!["--port", &port];
            again.extend_from_slice(extra);
            let (s, new_addr) = serve(dir, &again);
            assert_eq!(new_addr.port(), addr.port(), "restarted on the same port");
            server = Some(s);
            let stdin = child.stdin.as_mut().expect("stdin");
            stdin.write_all(b"go\n").expect("tell the driver to go on");
            stdin.flush().expect("flush");
        }
    }
    let status = child.wait().expect("wait for the driver program");
    if let Some(s) = server {
        server_stderr.push_str(&stop_server(s));
    }
    DriverRun {
        status,
        stdout,
        stderr: stderr_reader.join().unwrap_or_default(),
        server_stderr,
    }
}

impl DriverRun {
    /// Panics, with everything printed, unless the program succeeded and its
    /// last line is `done`.
    pub fn assert_done(&self, what: &str) {
        assert!(
            self.status.success() && self.stdout.trim_end().ends_with("done"),
            "{what} failed ({:?}):\n{}\n{}\nserver stderr:\n{}",
            self.status,
            self.stdout,
            self.stderr,
            self.server_stderr
        );
    }
}

/// The Python driver virtualenv's python (tests/drivers/python_setup.sh),
/// installing the pinned driver on first use.
pub fn python() -> String {
    let drivers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers");
    let setup = Command::new("bash")
        .arg(drivers.join("python_setup.sh"))
        .output()
        .expect("run python_setup.sh");
    assert!(
        setup.status.success(),
        "installing the Python driver failed: {}",
        String::from_utf8_lossy(&setup.stderr)
    );
    String::from_utf8_lossy(&setup.stdout).trim().to_string()
}

/// A Rust-driver (scylla crate) session to a served node.
pub async fn driver_session(addr: std::net::SocketAddr) -> scylla::client::session::Session {
    scylla::client::session_builder::SessionBuilder::new()
        .known_node(addr.to_string())
        .build()
        .await
        .expect("connect")
}

/// Runs one of a reference Cassandra's scripts (`start.sh`, `stop.sh`,
/// `nodetool.sh`) with a 2 GiB heap; insists on success; its output.
pub fn cassandra_script(script: &Path, args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(script)
        .args(args)
        .env("HEAP", "2G")
        .output()
        .expect("run a Cassandra script");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{} {args:?} failed: {text}",
        script.display()
    );
    text
}

/// Runs tests/drivers/cassandra_roundtrip.py with the Python driver;
/// insists on success; its stdout.
pub fn roundtrip_py(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/cassandra_roundtrip.py");
    let out = Command::new(python())
        .arg(script)
        .args(args)
        .output()
        .expect("run the Python helper");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "python {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}
