//! Crafted files are refused in bounded memory and bounded time, by every
//! command that reads them, and a listed one is set aside as unreadable while
//! the table keeps serving the rest (docs/DURABILITY.md).
//!
//! Found by the adversarial round: an sstable whose valid-CRC footer points
//! its statistics (and so its whole tail) at offset 0 of a 20 GiB sparse file
//! made `sstable metadata`, `scrub`, `import`, and `verify`, `tablestats`,
//! `stress read` when listed, allocate 21 GB and abort; a FIFO given as an
//! sstable blocked `sstable metadata` and `sstable import` forever (the
//! latter holding the directory lock).
//!
//! Every command here runs under a 4 GiB address-space limit, so an
//! allocation sized by the file instead of by a stated bound fails fast (as an
//! abort) instead of taking the machine's memory.

mod common;

use common::text;
use std::os::unix::process::CommandExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Address space each command may use.
const ADDRESS_SPACE_BYTES: u64 = 4 << 30;
/// A command still running after this is blocked.
const BLOCKED: Duration = Duration::from_secs(60);
/// The crafted file's size (sparse: it takes no disk).
const CRAFTED_BYTES: u64 = 20 << 30;

/// Runs `strata args` under the address-space limit; `None` if it was still
/// running after [`BLOCKED`] (then killed).
fn run(args: &[&str]) -> Option<Output> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork
    // and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: ADDRESS_SPACE_BYTES,
                rlim_max: ADDRESS_SPACE_BYTES,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("run strata");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return Some(child.wait_with_output().expect("output"));
        }
        if started.elapsed() > BLOCKED {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ended by itself, without a signal or a panic: a clean success or error.
fn ended_cleanly(args: &[&str]) -> Output {
    let out =
        run(args).unwrap_or_else(|| panic!("`strata {args:?}` still running after {BLOCKED:?}"));
    assert!(
        out.status.signal().is_none(),
        "`strata {args:?}` killed by signal {:?}: {}",
        out.status.signal(),
        text(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "`strata {args:?}` panicked: {}",
        text(&out)
    );
    out
}

/// CRC-32C (Castagnoli), bitwise: the footer's checksum.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A `CRAFTED_BYTES` sparse file ending in a valid footer (magic, version and
/// checksum right) whose chunk table, summary, filter and statistics all
/// start at offset 0: the whole file is "the tail".
fn craft(from: &Path, to: &Path) {
    let real = std::fs::read(from).unwrap();
    let footer = &real[real.len() - 60..];
    let mut f = Vec::with_capacity(60);
    for _ in 0..4 {
        f.extend_from_slice(&0u64.to_le_bytes());
    }
    f.extend_from_slice(&footer[32..40]); // uncompressed bytes
    f.extend_from_slice(&footer[40..44]); // chunk length
    f.extend_from_slice(&footer[44..48]); // format version
    let crc = crc32c(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    f.extend_from_slice(&footer[52..60]); // magic
    let file = std::fs::File::create(to).unwrap();
    file.set_len(CRAFTED_BYTES).unwrap();
    use std::os::unix::fs::FileExt;
    file.write_all_at(&f, CRAFTED_BYTES - 60).unwrap();
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A data directory with `stress.standard1` in two sstables.
fn data_dir(tmp: &Path) -> (PathBuf, PathBuf) {
    let data = tmp.join("data");
    for _ in 0..2 {
        let out = common::strata(&data, &["stress", "write", "-n", "100", "--no-tablestats"]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let table = data.join("stress").join("standard1");
    (data, table)
}

#[test]
fn a_huge_crafted_sstable_is_refused_by_the_single_file_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, table) = data_dir(tmp.path());
    let crafted = tmp.path().join("strata-77-Data.db");
    craft(&common::sstables(&table)[0], &crafted);
    let c = crafted.to_str().unwrap();
    let out = ended_cleanly(&["sstable", "metadata", c]);
    assert!(!out.status.success(), "{}", text(&out));
    let out_dir = tmp.path().join("scrubbed");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = ended_cleanly(&["sstable", "scrub", c, "--out", out_dir.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", text(&out));
    let d = data.to_str().unwrap();
    let out = ended_cleanly(&["sstable", "import", "stress.standard1", c, "--data-dir", d]);
    assert!(!out.status.success(), "{}", text(&out));
    // The refused import changed nothing and let go of the directory.
    let out = ended_cleanly(&["verify", "--data-dir", d]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_huge_crafted_listed_sstable_is_set_aside_and_the_table_serves_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, table) = data_dir(tmp.path());
    let listed = common::sstables(&table);
    assert!(listed.len() >= 2, "{listed:?}");
    let victim = &listed[0];
    let keep = tmp.path().join("victim-copy");
    std::fs::rename(victim, &keep).unwrap();
    craft(&keep, victim);
    let d = data.to_str().unwrap();
    let out = ended_cleanly(&["verify", "--data-dir", d]);
    assert!(!out.status.success(), "verify passed a crafted sstable");
    assert!(
        text(&out).contains(victim.file_name().unwrap().to_str().unwrap()),
        "{}",
        text(&out)
    );
    let out = ended_cleanly(&["tablestats", "--data-dir", d]);
    assert!(out.status.success(), "{}", text(&out));
    ended_cleanly(&[
        "stress",
        "read",
        "-n",
        "100",
        "--no-tablestats",
        "--data-dir",
        d,
    ]);
}

#[test]
fn a_fifo_given_as_an_sstable_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, table) = data_dir(tmp.path());
    let fifo = tmp.path().join("strata-5-Data.db");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let d = data.to_str().unwrap();
    let out = ended_cleanly(&["sstable", "metadata", f]);
    assert!(!out.status.success(), "{}", text(&out));
    let out = ended_cleanly(&["sstable", "import", "stress.standard1", f, "--data-dir", d]);
    assert!(!out.status.success(), "{}", text(&out));
    // A FIFO in place of a listed sstable: set aside, the rest served.
    let victim = &common::sstables(&table)[0];
    std::fs::remove_file(victim).unwrap();
    mkfifo(victim);
    let out = ended_cleanly(&["verify", "--data-dir", d]);
    assert!(!out.status.success(), "{}", text(&out));
    let out = ended_cleanly(&["tablestats", "--data-dir", d]);
    assert!(out.status.success(), "{}", text(&out));
    // In place of the schema and the manifest: refused, not waited on.
    let manifest = table.join("MANIFEST");
    std::fs::rename(&manifest, tmp.path().join("MANIFEST.real")).unwrap();
    mkfifo(&manifest);
    let out = ended_cleanly(&["tablestats", "--data-dir", d]);
    assert!(!out.status.success(), "{}", text(&out));
}
