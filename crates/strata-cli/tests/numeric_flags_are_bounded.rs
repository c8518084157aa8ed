//! Every numeric flag of every command, at 0, -1, its maximum and u64::MAX
//! (and, for floats, `inf` and `NaN`): a clean error or a bounded run, never a
//! panic, an abort or a hang over a minute.
//!
//! The flags come from clap's own command tree (`Cli::command()`), so a flag
//! added tomorrow is in the suite without anyone remembering it:
//! - a numeric flag (any integer type, `f64`, or a size, rate or duration) must
//!   be parsed by a bounded parser: its refusal of `-1` names its range as
//!   `MIN..=MAX`, which is also where the suite reads the maximum it tries;
//! - a text flag must be one this file knows is not a number, so a number
//!   hidden in a `String` cannot slip past;
//! - a command with a numeric flag must have a baseline below (the small run
//!   the flag's values are tried on).
//!
//! Found by the adversarial round this suite keeps: `bench commitlog
//! --value-size 18446744073709551615` (capacity overflow), `--max-seconds=inf`
//! (float to Duration), `--value-size 1099511627776` (abort), `simulate --node
//! A --flush-size 1` and `bench slice --rows 18446744073709551615` (no end).
//!
//! A run at a flag's maximum may be long by design (`stress -n 10^12`); such
//! flags are listed in [`LONG_AT_MAXIMUM`] with the reason, and there the
//! suite asks only that the run is still working without a panic after a few
//! seconds (then stops it). Everything else must end within a minute.

use clap::{Arg, ArgAction, Command, CommandFactory};
use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use strata_cli::bounds::Quantity;
use strata_cli::Cli;

/// A run that does not end within this is a hang (the figure).
const HANG: Duration = Duration::from_secs(60);
/// How long a [`LONG_AT_MAXIMUM`] run must keep working before it is stopped.
const LONG_RUN_SAMPLE: Duration = Duration::from_secs(2);

/// `(command path, flag, why its maximum is a long run by design)`.
const LONG_AT_MAXIMUM: &[(&str, &str, &str)] = &[
    ("stress", "--ops", "10^12 operations"),
    (
        "bench memtable",
        "--runs",
        "a fixed experiment of about a minute per run",
    ),
    (
        "bench memtable",
        "--threads",
        "a fixed experiment of about a minute per run",
    ),
    ("bench slice", "--rows", "10 million rows loaded and read"),
    ("bench slice", "--min-millis", "ten minutes per case"),
    ("bench lcs-fanout", "--hours", "a thousand simulated hours"),
    (
        "bench lcs-fanout",
        "--scale",
        "the seed's full size: 160 MiB sstables",
    ),
    (
        "bench lcs-fanout",
        "--cells-per-partition",
        "partitions of 100,000 rows",
    ),
    (
        "bench lcs-levels",
        "--sizes",
        "a simulated 100 TiB case takes hours",
    ),
    (
        "bench timeseries",
        "--write-days",
        "ten years of simulated writes",
    ),
    (
        "bench timeseries",
        "--recent-read-days",
        "ten years of simulated reads",
    ),
    (
        "bench timeseries",
        "--cold-read-days",
        "ten years of simulated reads",
    ),
    ("bench blobstore", "--files", "100,000 files per run"),
    ("bench blobstore", "--file-size-mib", "a 64 GiB file"),
    ("bench compression", "--raw-mib", "16 GiB per dataset"),
    ("bench compression", "--read-seconds", "an hour of reads"),
    (
        "bench compression",
        "--recompression-quota-mb",
        "16 GiB of recompression",
    ),
];

/// Text flags that hold no number (names, paths, CQL, lists of names).
const TEXT_FLAGS: &[&str] = &[
    "execute",
    "keyspace",
    "target",
    "table",
    "options",
    "table_options",
    "cql",
    "name",
    "strategy",
    "strategies",
    "configs",
    "engine_configs",
    "segment",
    "file",
    "files",
    "ty",
    "value",
    "host",
    "username",
    "password",
    "log_level",
    "key",
    "ratio",
    "rate",
    "duration",
];

/// Numeric positional arguments (no `--long` name to try them by), each with
/// why its type bounds it: `(command path, argument id, why)`.
const POSITIONAL_NUMBERS: &[(&str, &str, &str)] = &[
    (
        "cql",
        "port",
        "a TCP port, a u16: clap refuses -1 and 65536, and every value in between is a port",
    ),
    (
        "setcompactionthroughput",
        "mib_per_sec",
        "bounded by its parser (0..=1048576), and offline the command refuses before using it",
    ),
];

/// What the suite tries a flag with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Whole,
    Float,
    /// A size, rate or duration with units.
    Quantity,
}

fn numeric_kind(arg: &Arg) -> Option<Kind> {
    let id = arg.get_value_parser().type_id();
    let whole = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<isize>(),
    ];
    if whole.iter().any(|t| id == *t) {
        Some(Kind::Whole)
    } else if id == TypeId::of::<f64>() || id == TypeId::of::<f32>() {
        Some(Kind::Float)
    } else if id == TypeId::of::<Quantity>() {
        Some(Kind::Quantity)
    } else {
        None
    }
}

/// Whether `arg` is known not to be a number; `Err` names an argument the
/// suite cannot classify (a new kind of flag: teach this file about it).
fn non_numeric(arg: &Arg) -> Result<(), String> {
    if matches!(
        arg.get_action(),
        ArgAction::SetTrue
            | ArgAction::SetFalse
            | ArgAction::Count
            | ArgAction::Help
            | ArgAction::HelpShort
            | ArgAction::HelpLong
            | ArgAction::Version
    ) {
        return Ok(());
    }
    let id = arg.get_value_parser().type_id();
    if !arg.get_possible_values().is_empty()
        || id == TypeId::of::<PathBuf>()
        || id == TypeId::of::<char>()
        || id == TypeId::of::<std::net::IpAddr>()
        || (id == TypeId::of::<String>() && TEXT_FLAGS.contains(&arg.get_id().as_str()))
    {
        return Ok(());
    }
    Err(format!(
        "argument '{}' is neither a bounded number nor a known text flag",
        arg.get_id()
    ))
}

/// One numeric flag of one command.
#[derive(Clone, Debug)]
struct Flag {
    /// Subcommand names from the root (empty: the root's own flags).
    path: Vec<String>,
    long: String,
    kind: Kind,
}

fn walk(
    cmd: &Command,
    path: &mut Vec<String>,
    seen: &mut BTreeSet<(String, String)>,
    flags: &mut Vec<Flag>,
    problems: &mut Vec<String>,
) {
    for arg in cmd.get_arguments() {
        let where_ = format!("strata {}", path.join(" "));
        match numeric_kind(arg) {
            Some(_)
                if arg.is_positional()
                    && POSITIONAL_NUMBERS
                        .iter()
                        .any(|(p, id, _)| *p == path.join(" ") && *id == arg.get_id().as_str()) => {
            }
            Some(kind) => {
                let Some(long) = arg.get_long() else {
                    problems.push(format!(
                        "{where_}: numeric argument '{}' has no --long name",
                        arg.get_id()
                    ));
                    continue;
                };
                // A flag shared through a flattened group (the data-directory
                // options of every command that opens one) is one flag:
                // tried once, where it first appears (the root, before `flush`).
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                if seen.insert((long.to_string(), help)) {
                    flags.push(Flag {
                        path: path.clone(),
                        long: long.to_string(),
                        kind,
                    });
                }
            }
            None => {
                if let Err(e) = non_numeric(arg) {
                    problems.push(format!("{where_}: {e}"));
                }
            }
        }
    }
    for sub in cmd.get_subcommands() {
        path.push(sub.get_name().to_string());
        walk(sub, path, seen, flags, problems);
        path.pop();
    }
}

/// The small run each command's flags are tried on: its arguments, with
/// `{D}` the prepared data directory, `{T}` a scratch directory and `{S}` one
/// of the data directory's sstables. The tried flag is dropped from these if
/// they give it too.
fn baselines() -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut b = BTreeMap::new();
    // The root's flags are the data-directory options, tried before `flush`.
    b.insert("", vec!["--data-dir", "{D}", "flush"]);
    // A server runs until stopped: a configuration file that does not exist
    // ends the run after the flags are parsed (and bounded).
    b.insert(
        "serve",
        vec!["--data-dir", "{D}", "--config", "{D}/no-such-strata.yaml"],
    );
    b.insert(
        "stress",
        vec![
            "write",
            "--data-dir",
            "{D}",
            "--ops",
            "2",
            "--no-tablestats",
        ],
    );
    // A shell connecting to a closed loopback port: refused at once, after
    // the flags are parsed (and bounded).
    b.insert("cql", vec!["127.0.0.1", "1", "-e", "SELECT 1"]);
    b.insert("compact", vec!["--data-dir", "{D}"]);
    b.insert("upgradesstables", vec!["--data-dir", "{D}", "--dry-run"]);
    // Zstd, so that --zstd-level applies; a second run into the same
    // directory is refused as not empty, after its flags are parsed.
    b.insert(
        "export",
        vec![
            "stress.standard1",
            "--data-dir",
            "{D}",
            "--format",
            "cassandra",
            "--compression",
            "zstd",
            "--out",
            "{T}",
        ],
    );
    b.insert(
        "traincompressiondictionary",
        vec!["stress.standard1", "--data-dir", "{D}"],
    );
    b.insert("sstable scrub", vec!["{S}", "--out", "{T}"]);
    b.insert(
        "bench commitlog",
        vec![
            "--ops",
            "20",
            "--threads",
            "1",
            "--modes",
            "batch",
            "--max-seconds",
            "5",
            "--dir",
            "{T}",
        ],
    );
    b.insert(
        "bench lcs-fanout",
        vec![
            "--scale",
            "0.0001",
            "--hours",
            "0.01",
            "--nodes",
            "A",
            "--cells-per-partition",
            "1",
            "--flush-mib",
            "1",
            "--dir",
            "{T}",
        ],
    );
    b.insert(
        "bench lcs-levels",
        vec![
            "--skip-engine",
            "--sizes",
            "1GiB",
            "--configs",
            "normal4",
            "--dir",
            "{T}",
        ],
    );
    b.insert(
        "bench timeseries",
        vec![
            "--series",
            "1",
            "--write-days",
            "0.01",
            "--recent-read-days",
            "0",
            "--cold-read-days",
            "0",
            "--strategies",
            "STCS",
            "--no-out-of-order",
            "--dir",
            "{T}",
        ],
    );
    b.insert(
        "bench slice",
        vec!["--rows", "20", "--min-millis", "0", "--dir", "{T}"],
    );
    b.insert(
        "bench blobstore",
        vec![
            "--files",
            "1",
            "--file-size-mib",
            "1",
            "--block-size-kib",
            "64",
            "--runs",
            "1",
            "--strategies",
            "STCS",
            "--memtable-mb",
            "1",
            "--idle-timeout",
            "5",
            "--dir",
            "{T}",
        ],
    );
    b.insert(
        "bench compression",
        vec![
            "--raw-mib",
            "1",
            "--concurrency",
            "1",
            "--read-seconds",
            "0.01",
            "--rounds",
            "1",
            "--recompression-quota-mb",
            "0",
            "--dir",
            "{T}",
        ],
    );
    b.insert("bench memtable", vec!["--runs", "1", "--threads", "1"]);
    b.insert("model", vec!["--data-size", "100GiB"]);
    b.insert(
        "model advise",
        vec![
            "--ingest-rate",
            "1MiB/s",
            "--ttl",
            "2d",
            "--free-disk",
            "1TiB",
        ],
    );
    b.insert("simulate", vec!["--node", "A", "--duration", "1h"]);
    b
}

/// How one run ended.
struct Ended {
    /// `None`: stopped by the suite (still running at its deadline).
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
}

fn run(args: &[String], deadline: Duration) -> Ended {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run strata");
    // Read stderr on a thread so a chatty run cannot block on a full pipe.
    let mut pipe = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.join().unwrap_or_default();
    Ended {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        stderr,
    }
}

/// The invocation of `flag` at `value`: the baseline without the flag, then
/// `--flag=value` (before the subcommand for the root's own flags).
fn invocation(
    flag: &Flag,
    value: &str,
    baseline: &[&str],
    subs: &BTreeMap<&str, String>,
) -> Vec<String> {
    let fill = |a: &str| {
        let mut s = a.to_string();
        for (k, v) in subs {
            s = s.replace(k, v);
        }
        s
    };
    // Drop the tried flag (and its value) from the baseline.
    let mut base = Vec::new();
    let mut skip_next = false;
    for a in baseline {
        if skip_next {
            skip_next = false;
            continue;
        }
        if *a == format!("--{}", flag.long) {
            skip_next = true;
            continue;
        }
        base.push(fill(a));
    }
    let setting = format!("--{}={value}", flag.long);
    let mut line: Vec<String> = flag.path.clone();
    if flag.path.is_empty() {
        // `strata --data-dir D --flag=v flush`: the subcommand comes last.
        let sub = base
            .pop()
            .expect("the root's baseline ends with its subcommand");
        line.extend(base);
        line.push(setting);
        line.push(sub);
    } else {
        line.extend(base);
        line.push(setting);
    }
    line
}

/// `MAX` of the `MIN..=MAX` a bounded parser's refusal names.
fn named_maximum(stderr: &str) -> Option<String> {
    let at = stderr.find("..=")? + 3;
    let rest = &stderr[at..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == ')' || c == ':' || c == ';')
        .unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// A directory on tmpfs when there is one: the benches fsync, and the suite
/// is about ending, not about the disk.
fn scratch_root() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(t) = tempfile::tempdir_in(shm) {
            return t;
        }
    }
    tempfile::tempdir().expect("tempdir")
}

/// A data directory with one table (`stress.standard1`) and its sstables.
fn prepare_data_dir(dir: &Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["stress", "write", "--ops", "200", "--no-tablestats"])
        .arg("--data-dir")
        .arg(dir)
        .output()
        .expect("stress write");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// Tries every value of one flag (module docs); returns the problems found.
/// Each flag gets its own copy of the data directory and its own scratch
/// directory, so flags run side by side without meeting each other's lock.
fn try_flag(flag: &Flag, baseline: &[&str], template: &Path, root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let path = flag.path.join(" ");
    let name = format!("strata {path} --{}", flag.long);
    let data = root.join("data");
    copy_tree(template, &data);
    let scratch = root.join("scratch");
    std::fs::create_dir_all(&scratch).expect("scratch");
    let table = data.join("stress").join("standard1");
    let sstable = std::fs::read_dir(&table)
        .expect("table dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with("-Data.db"))
        .expect("an sstable after stress write");
    // A copy outside the data directory for the single-file tools.
    let single = root.join(sstable.file_name().expect("name"));
    std::fs::copy(&sstable, &single).expect("copy sstable");
    let mut subs = BTreeMap::new();
    subs.insert("{D}", data.display().to_string());
    subs.insert("{T}", scratch.display().to_string());
    subs.insert("{S}", single.display().to_string());
    // The refusal of -1 must name the range (a bounded parser); it gives the
    // maximum to try. A signed flag may take -1: then the maximum comes from
    // the refusal of a value past any range.
    let mut max = None;
    for v in ["-1", "1e400", "999999999999999999999999"] {
        let e = run(&invocation(flag, v, baseline, &subs), HANG);
        if e.code == Some(2) {
            max = named_maximum(&e.stderr);
            if max.is_none() {
                problems.push(format!(
                    "{name}={v}: refused without naming a range: {}",
                    e.stderr.trim()
                ));
            }
            break;
        }
    }
    let Some(max) = max else {
        problems.push(format!(
            "{name}: no out-of-range value refused with its range"
        ));
        return problems;
    };
    let mut values = vec!["0".to_string(), "-1".to_string(), max.clone()];
    if max != u64::MAX.to_string() {
        values.push(u64::MAX.to_string());
    }
    if flag.kind == Kind::Float {
        values.extend(["inf".to_string(), "NaN".to_string()]);
    }
    let long_at_max = LONG_AT_MAXIMUM
        .iter()
        .any(|(p, f, _)| *p == path && *f == format!("--{}", flag.long));
    for v in &values {
        let is_max = *v == max;
        let deadline = if long_at_max && is_max {
            LONG_RUN_SAMPLE
        } else {
            HANG
        };
        let e = run(&invocation(flag, v, baseline, &subs), deadline);
        let what = format!("{name}={v}");
        if e.stderr.contains("panicked") {
            problems.push(format!("{what}: panicked: {}", e.stderr.trim()));
        }
        match (e.code, e.signal) {
            (Some(0..=2), _) => {}
            (None, None) if long_at_max && is_max => {}
            (None, None) => problems.push(format!("{what}: still running after {HANG:?}")),
            (code, signal) => problems.push(format!(
                "{what}: ended with code {code:?}, signal {signal:?}: {}",
                e.stderr.trim()
            )),
        }
    }
    problems
}

/// Flags tried at once: most runs wait on fsyncs and sleeps, not the CPU.
const WORKERS: usize = 3;

#[test]
fn numeric_flags_are_bounded() {
    let mut flags = Vec::new();
    let mut problems = Vec::new();
    walk(
        &Cli::command(),
        &mut Vec::new(),
        &mut BTreeSet::new(),
        &mut flags,
        &mut problems,
    );
    assert!(
        flags.len() > 80,
        "the walk found only {} numeric flags",
        flags.len()
    );
    let tmp = scratch_root();
    let template = tmp.path().join("template");
    prepare_data_dir(&template);
    let baselines = baselines();
    let started = Instant::now();
    let mut jobs = Vec::new();
    for (i, flag) in flags.iter().enumerate() {
        let path = flag.path.join(" ");
        match baselines.get(path.as_str()) {
            Some(b) => jobs.push((i, flag.clone(), b.clone())),
            None => problems.push(format!(
                "strata {path} --{}: no baseline run for `strata {path}`",
                flag.long
            )),
        }
    }
    let queue = std::sync::Mutex::new(jobs);
    let found = std::sync::Mutex::new(problems);
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| loop {
                let Some((i, flag, baseline)) = queue.lock().expect("queue").pop() else {
                    break;
                };
                let root = tmp.path().join(format!("flag-{i}"));
                let p = try_flag(&flag, &baseline, &template, &root);
                let _ = std::fs::remove_dir_all(&root);
                found.lock().expect("problems").extend(p);
            });
        }
    });
    let problems = found.into_inner().expect("problems");
    eprintln!(
        "{} numeric flags in {:.0} s",
        flags.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
