//! A writer in a child process for the operator-mistake suite (a file deleted,
//! replaced or copied in from elsewhere beside a live owner): the test binary
//! re-executed on its own `child_entry` test with the data directory in
//! [`ENV_DIR`]. The parent drives it one command at a time and waits for the
//! answer, so every step is a handshake and nothing depends on timing.
//!
//! Protocol (parent to child on stdin, one command a line; child to parent on
//! stdout, one line per `write(2)`, so each line survives a kill once written):
//! ```text
//! W <from> <to>     insert keys from..to (common::value(k)), batch sync:
//!                   "@A <k>" after each acknowledged insert, then "@DONE";
//!                   on the first refused insert "@E <k> <error>" and stop
//! F                 flush the table: "@DONE" or "@E - <error>"
//! Q                 close the database and exit: "@DONE" or "@E - <error>"
//! ```
//! The child prints `@READY` once the database is open and the table exists.
//! Tables are `common::CREATE`'s `ks.t`; the commit log syncs in batch mode, so
//! an acknowledged write is durable when `@A` is printed.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;
use strata::commitlog::{CommitLogOptions, SyncMode};
use strata::db::{Database, DbOptions};

/// The environment variable naming the child's data directory.
pub const ENV_DIR: &str = "STRATA_WRITER_CHILD_DIR";
/// How long the parent waits for one answer before failing the test: a bound
/// against a hung child, never a pace (every step waits for its answer).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the child waits while the directory's lock is held by a copy of
/// the parent's descriptor (see `child_entry`).
const LOCKED_WAIT: Duration = Duration::from_secs(10);
/// Small segments, so a few hundred writes span several and flushes retire some.
pub const SEGMENT_SIZE_BYTES: u64 = 4096;

/// The options every opener of these directories uses: batch sync, small
/// segments, no background compaction (the suite's steps stay the ones it takes).
pub fn options() -> DbOptions {
    let mut o = super::options();
    o.commitlog = Some(CommitLogOptions {
        sync: SyncMode::Batch,
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        ..CommitLogOptions::default()
    });
    o
}

/// The same with `ignore_replay_errors`.
pub fn options_ignoring_replay_errors() -> DbOptions {
    let mut o = options();
    if let Some(log) = &mut o.commitlog {
        log.ignore_replay_errors = true;
    }
    o
}

/// The child's side: returns at once unless [`ENV_DIR`] is set.
pub fn child_entry() {
    let Ok(dir) = std::env::var(ENV_DIR) else {
        return;
    };
    let out = std::io::stdout();
    let say = |line: String| {
        let mut o = out.lock();
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    };
    // A test thread's fork copies the parent's descriptors until it reaches
    // exec, a previous owner's directory lock included: a refusal for that
    // moment is waited out (bounded), as crash_kill9's harness does.
    let started = std::time::Instant::now();
    let db = loop {
        match Database::open(Path::new(&dir), options()) {
            Ok(db) => break db,
            Err(strata::error::Error::Locked(_)) if started.elapsed() < LOCKED_WAIT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                say(format!("@E - {e}"));
                return;
            }
        }
    };
    let t = match db.table("ks", "t") {
        Ok(t) => t,
        Err(_) => db.create_table_cql(super::CREATE).expect("create table"),
    };
    say("@READY".into());
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            ["W", from, to] => {
                let (from, to): (i32, i32) = (from.parse().unwrap(), to.parse().unwrap());
                let mut failed = false;
                for k in from..to {
                    let row = [
                        ("k", strata::types::Value::Int(k)),
                        ("v", strata::types::Value::Text(super::value(k))),
                    ];
                    match t.insert(&row, &Default::default()) {
                        Ok(()) => say(format!("@A {k}")),
                        Err(e) => {
                            say(format!("@E {k} {e}"));
                            failed = true;
                            break;
                        }
                    }
                }
                if !failed {
                    say("@DONE".into());
                }
            }
            ["F"] => match t.flush() {
                Ok(()) => say("@DONE".into()),
                Err(e) => say(format!("@E - {e}")),
            },
            ["Q"] => {
                drop(t);
                match db.close() {
                    Ok(()) => say("@DONE".into()),
                    Err(e) => say(format!("@E - {e}")),
                }
                return;
            }
            _ => say(format!("@E - unknown command {line:?}")),
        }
    }
}

/// What a command ended with.
#[derive(Debug)]
pub enum Answer {
    Done,
    /// The first refused key (`None` for a flush or close) and the error.
    Refused(Option<i32>, String),
}

/// The parent's handle of a running writer.
pub struct Writer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// Every key the child acknowledged.
    pub acked: BTreeSet<i32>,
    pub dir: PathBuf,
}

impl Writer {
    /// Starts this test binary's `child_entry` test on `dir` and waits for it to
    /// open the database.
    pub fn start(dir: &Path) -> Writer {
        let exe = std::env::current_exe().expect("test binary");
        let mut child = Command::new(exe)
            .args(["child_entry", "--exact", "--nocapture", "--test-threads=1"])
            .env(ENV_DIR, dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the writer");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                // The test harness prints "test child_entry ... " before the
                // child's first line, without a newline.
                let Some(at) = line.find('@') else { continue };
                if tx.send(line[at..].to_string()).is_err() {
                    return;
                }
            }
        });
        let mut w = Writer {
            child,
            stdin,
            lines,
            acked: BTreeSet::new(),
            dir: dir.to_path_buf(),
        };
        let first = w.next_line();
        assert_eq!(first, "@READY", "the writer did not open {}", dir.display());
        w
    }

    fn next_line(&mut self) -> String {
        self.lines
            .recv_timeout(ANSWER_TIMEOUT)
            .expect("the writer stopped answering")
    }

    fn command(&mut self, cmd: &str) -> Answer {
        writeln!(self.stdin, "{cmd}").expect("send a command");
        self.stdin.flush().expect("send a command");
        loop {
            let line = self.next_line();
            if line == "@DONE" {
                return Answer::Done;
            }
            if let Some(k) = line.strip_prefix("@A ") {
                self.acked.insert(k.parse().expect("key"));
                continue;
            }
            if let Some(rest) = line.strip_prefix("@E ") {
                let (k, msg) = rest.split_once(' ').unwrap_or((rest, ""));
                return Answer::Refused(k.parse().ok(), msg.to_string());
            }
            panic!("unexpected line from the writer: {line}");
        }
    }

    /// Inserts keys `range`; every acknowledged one is remembered.
    pub fn write(&mut self, range: std::ops::Range<i32>) -> Answer {
        self.command(&format!("W {} {}", range.start, range.end))
    }

    /// Inserts keys `range` and fails the test unless all were acknowledged.
    /// A writer on `dir` with keys 0..200 written and flushed to one
    /// sstable: the starting point of the ownership and foreign-file tests.
    pub fn start_flushed(dir: &Path) -> Writer {
        let mut w = Writer::start(dir);
        w.write_all(0..200);
        assert!(matches!(w.flush(), Answer::Done));
        w
    }

    pub fn write_all(&mut self, range: std::ops::Range<i32>) {
        match self.write(range.clone()) {
            Answer::Done => {}
            other => panic!("writing {range:?}: {other:?}"),
        }
    }

    pub fn flush(&mut self) -> Answer {
        self.command("F")
    }

    /// Closes the database and waits for the child to exit.
    pub fn quit(mut self) -> Answer {
        let answer = self.command("Q");
        let _ = self.child.wait();
        answer
    }

    /// SIGKILL, then reap: the directory is left as a crash leaves it.
    pub fn kill(mut self) -> BTreeSet<i32> {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
        std::mem::take(&mut self.acked)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Keys of `acked` that do not read back with their value from `db`'s `ks.t`.
pub fn lost(db: &Database, acked: &BTreeSet<i32>) -> Vec<i32> {
    let t = db.table("ks", "t").expect("table ks.t");
    acked
        .iter()
        .copied()
        .filter(|&k| !matches!(super::read(&t, k), Ok(true)))
        .collect()
}
