//! The Java driver client (tests/drivers/java, built by java_setup.sh) as a
//! child process the Java driver tests drive a line at a time.
#![allow(dead_code)]

use super::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long one phase of the client may take: JVM start, connection and the
/// workload take about 15 s on an idle 2-core machine.
pub const PHASE: Duration = Duration::from_secs(300);

/// The classpath of the built client.
pub fn java_classpath() -> String {
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/java_setup.sh");
    let out = Command::new("bash")
        .arg(setup)
        .output()
        .expect("run java_setup.sh");
    assert!(
        out.status.success(),
        "building the Java driver client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The Java client running, its stdout read a line at a time as it comes.
pub struct JavaClient {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    seen: Vec<String>,
    stderr: Option<JoinHandle<String>>,
}

/// A client left behind by a failed assertion does not outlive the test.
impl Drop for JavaClient {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl JavaClient {
    pub fn start(classpath: &str, addr: SocketAddr, extra: &[&str]) -> JavaClient {
        let mut child = Command::new("java")
            .arg("-cp")
            .arg(classpath)
            .arg("strata.JavaDriverClient")
            .arg(addr.ip().to_string())
            .arg(addr.port().to_string())
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn java");
        let stdin = child.stdin.take().expect("java stdin");
        let stdout = child.stdout.take().expect("java stdout");
        let mut err = child.stderr.take().expect("java stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        JavaClient {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    pub fn transcript(&self) -> String {
        self.seen.join("\n")
    }

    /// Reads lines until one equal to `wanted`; panics if the client exits
    /// first or it does not come within [`PHASE`].
    pub fn wait_for(&mut self, wanted: &str) {
        let deadline = Instant::now() + PHASE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = line == wanted;
                    self.seen.push(line);
                    if done {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {wanted:?} within {PHASE:?}:\n{}", self.transcript());
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().expect("wait java");
                    panic!(
                        "the client exited ({status}) before {wanted:?}:\n{}",
                        self.transcript()
                    );
                }
            }
        }
    }

    pub fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to the client's stdin");
        self.stdin.flush().expect("flush the client's stdin");
    }

    /// Waits (at most `limit`) for the client to exit: its status, stdout
    /// and stderr.
    pub fn finish(&mut self, limit: Duration) -> (ExitStatus, String, String) {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "the client did not finish within {limit:?}:\n{}",
                        self.transcript()
                    );
                }
            }
        }
        // Stdout closed: the JVM is exiting.
        let status = self.child.wait().expect("wait java");
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().expect("stderr reader"))
            .unwrap_or_default();
        (status, self.transcript(), stderr)
    }
}

/// The second half of a workload run with `--restart`: once the client waits
/// at `ready for restart`, the server is stopped and started again on the
/// same data directory and address (`extra`: its arguments besides the
/// port), the client goes on, and must succeed with the workload's
/// landmarks in its transcript, which is returned.
pub fn restart_and_finish(
    mut client: JavaClient,
    server: Child,
    dir: &Path,
    addr: SocketAddr,
    extra: &[&str],
) -> String {
    client.wait_for("ready for restart");
    let first = common::stop_server(server);
    let port = addr.port().to_string();
    let mut args = vec!["--port", port.as_str()];
    args.extend_from_slice(extra);
    let (server, again) = common::serve(dir, &args);
    assert_eq!(again, addr, "the server came back on the same address");
    client.send("restarted");

    let (status, out, err) = client.finish(PHASE);
    let second = common::stop_server(server);
    assert!(
        status.success(),
        "Java driver failed ({status}):\n{out}\n{err}\nserver stderr before the restart:\n{first}\nafter:\n{second}"
    );
    for line in [
        "connected protocol V5",
        "created keyspace jd and 3 tables",
        "lightweight transactions: applied and not applied, with the current values",
        "after restart: prepared statements, LWTs, batch, metadata and paging all work",
    ] {
        assert!(out.lines().any(|l| l == line), "no {line:?} in:\n{out}");
    }
    assert!(out.trim_end().ends_with("done"), "{out}");
    out
}
