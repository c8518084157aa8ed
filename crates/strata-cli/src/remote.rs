//! Admin commands against a running server: the loopback admin endpoint of
//! `strata serve` and the CLI's side of it.
//!
//! A server owns its data directory (the directory lock), so an admin command
//! cannot open it. Instead the server listens on a Unix socket in the data
//! directory, `admin.sock`, and the CLI, finding a server there, sends it its
//! command line; the server runs the same code as offline on its open
//! database and sends back what it printed and the exit code.
//!
//! Contract:
//! 1. The same output as offline: a served command runs the CLI's own
//!    function; its database handle ([`AdminDb`]) is the server's, and its
//!    output (the [`outln!`]/[`errln!`] macros the admin commands print with)
//!    is captured on the thread that runs it and sent back verbatim.
//! 2. Only the admin commands ([`served`]) run remotely, and only without
//!    data-directory options: the server runs with its own settings, and a
//!    `--commitlog-sync` it would not apply is refused, not ignored.
//! 3. Who may ask: the socket is created mode 0600, and each connection's
//!    peer must be the server's own user or root (SO_PEERCRED); anyone else
//!    gets a one-line refusal.
//! 4. Nothing else is touched: the endpoint removes only a socket at its own
//!    path (a stale one from a killed server, safe to remove because the
//!    server holds the directory lock), refuses to start over anything else,
//!    and removes its socket when it stops. A path too long for a Unix socket
//!    (107 bytes) leaves the server without the endpoint, with a warning.
//! 5. Bounded input: a request is one JSON line of at most 64 KiB, sent
//!    within 10 s of connecting; anything longer, slower or malformed is
//!    refused with one line.

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use strata::db::Database;
use strata::{Error, Result};

/// The socket's name in the data directory.
pub const SOCKET_NAME: &str = "admin.sock";
/// Largest request line accepted.
const MAX_REQUEST_BYTES: u64 = 64 * 1024;
/// Largest answer the CLI reads (a verify or tablestats of many tables is
/// large, but not this large).
const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;
/// How long a connection may take to send its request line.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// `sockaddr_un.sun_path` holds 108 bytes with the terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

// ---------------------------------------------------------------------------
// Output and database of the command running on this thread

/// What a served command printed.
#[derive(Default, Debug)]
pub struct Captured {
    pub stdout: String,
    pub stderr: String,
}

thread_local! {
    static CAPTURE: RefCell<Option<Captured>> = const { RefCell::new(None) };
    static SERVED_DB: RefCell<Option<Arc<Database>>> = const { RefCell::new(None) };
}

/// Prints to the command's stdout: the terminal, or the captured answer of a
/// served command.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    CAPTURE.with(|c| match &mut *c.borrow_mut() {
        Some(cap) => {
            use std::fmt::Write as _;
            let _ = cap.stdout.write_fmt(args);
        }
        None => print!("{args}"),
    });
}

/// As [`write_out`], for stderr.
pub fn write_err(args: std::fmt::Arguments<'_>) {
    CAPTURE.with(|c| match &mut *c.borrow_mut() {
        Some(cap) => {
            use std::fmt::Write as _;
            let _ = cap.stderr.write_fmt(args);
        }
        None => eprint!("{args}"),
    });
}

/// `println!` for admin commands (contract 1).
#[macro_export]
macro_rules! outln {
    () => { $crate::remote::write_out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::remote::write_out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `print!` for admin commands.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::remote::write_out(format_args!($($t)*)) };
}

/// `eprintln!` for admin commands.
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::remote::write_err(format_args!("{}\n", format_args!($($t)*))) };
}

/// The database an admin command works on: opened by the command (and closed
/// by it), or the running server's (left open).
pub enum AdminDb {
    Opened(Box<Database>),
    Served(Arc<Database>),
}

impl std::ops::Deref for AdminDb {
    type Target = Database;
    fn deref(&self) -> &Database {
        match self {
            AdminDb::Opened(db) => db,
            AdminDb::Served(db) => db,
        }
    }
}

impl AdminDb {
    /// Closes a database the command opened; the server's stays open.
    pub fn close(self) -> Result<()> {
        match self {
            AdminDb::Opened(db) => db.close(),
            AdminDb::Served(_) => Ok(()),
        }
    }
}

/// The running server's database when this command is served by it.
pub fn served_db() -> Option<Arc<Database>> {
    SERVED_DB.with(|s| s.borrow().clone())
}

/// Opens `dir` for an admin command as its owner, or hands over the server's
/// database when the command is served.
pub fn open_admin_db(dir: &Path) -> Result<AdminDb> {
    match SERVED_DB.with(|s| s.borrow().clone()) {
        Some(db) => Ok(AdminDb::Served(db)),
        None => Ok(AdminDb::Opened(Box::new(crate::open_db(dir)?))),
    }
}

/// As [`open_admin_db`], read-only when opened here.
pub fn open_admin_db_read_only(dir: &Path) -> Result<AdminDb> {
    match SERVED_DB.with(|s| s.borrow().clone()) {
        Some(db) => Ok(AdminDb::Served(db)),
        None => Ok(AdminDb::Opened(Box::new(crate::open_db_read_only(dir)?))),
    }
}

/// Runs `f` with `db` as the command's database and its output captured.
fn serve_command<T>(db: Arc<Database>, f: impl FnOnce() -> T) -> (T, Captured) {
    SERVED_DB.with(|s| *s.borrow_mut() = Some(db));
    CAPTURE.with(|c| *c.borrow_mut() = Some(Captured::default()));
    let value = f();
    SERVED_DB.with(|s| *s.borrow_mut() = None);
    let captured = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (value, captured)
}

// ---------------------------------------------------------------------------
// Wire format: one JSON line each way

#[derive(serde::Serialize, serde::Deserialize)]
struct Request {
    /// The command line after `strata`, data-directory options removed.
    args: Vec<String>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Answer {
    stdout: String,
    stderr: String,
    code: u8,
}

// ---------------------------------------------------------------------------
// The server's side

/// A listening admin endpoint; stops and removes its socket when dropped.
pub struct Endpoint {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Starts the endpoint of the server that owns `data_dir` (contract 4).
/// `Ok(None)`: no endpoint, for the reason printed as a warning.
pub fn start(data_dir: &Path, db: Arc<Database>) -> Result<Option<Endpoint>> {
    let path = data_dir.join(SOCKET_NAME);
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        eprintln!(
            "warning: {} is longer than a Unix socket path may be ({MAX_SOCKET_PATH} bytes): \
             no admin endpoint, so admin commands cannot reach this server",
            path.display()
        );
        return Ok(None);
    }
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_socket() => {
            // A killed server's: this process holds the directory lock, so no
            // other server is listening on it.
            std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
        }
        Ok(_) => {
            return Err(Error::InvalidInput(format!(
                "{} exists and is not the admin socket; move it out of the data directory",
                path.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&path, e)),
    }
    let listener = UnixListener::bind(&path).map_err(|e| Error::io(&path, e))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::io(&path, e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let data_dir = data_dir.to_path_buf();
    let thread = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("strata-admin".into())
            .spawn(move || accept_loop(listener, &stop, &data_dir, &db))
            .map_err(|e| Error::InvalidInput(format!("cannot start the admin endpoint: {e}")))?
    };
    Ok(Some(Endpoint {
        path,
        stop,
        thread: Some(thread),
    }))
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept so the loop sees the flag.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Accepts until told to stop, then waits for the commands still running:
/// each holds the database, which the server closes only after.
fn accept_loop(listener: UnixListener, stop: &AtomicBool, data_dir: &Path, db: &Arc<Database>) {
    let mut running: Vec<std::thread::JoinHandle<()>> = Vec::new();
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        running.retain(|t| !t.is_finished());
        let Ok(conn) = conn else { continue };
        let (data_dir, db) = (data_dir.to_path_buf(), db.clone());
        // A long `compact` must not hold up a `compactionstats` beside it.
        if let Ok(t) = std::thread::Builder::new()
            .name("strata-admin-cmd".into())
            .spawn(move || answer(conn, &data_dir, db))
        {
            running.push(t);
        }
    }
    for t in running {
        let _ = t.join();
    }
}

/// The uid of the process at the other end of `conn`.
fn peer_uid(conn: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    let rc = unsafe {
        libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

fn answer(conn: UnixStream, data_dir: &Path, db: Arc<Database>) {
    let refuse = |why: String| Answer {
        stdout: String::new(),
        stderr: format!("error: {why}\n"),
        code: 1,
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let reply = match peer_uid(&conn) {
        Some(uid) if uid == me || uid == 0 => match read_request(&conn) {
            Ok(args) => run_served(args, data_dir, db),
            Err(why) => refuse(why),
        },
        _ => refuse("the admin endpoint answers only the server's own user".into()),
    };
    let mut line = serde_json::to_string(&reply).unwrap_or_default();
    line.push('\n');
    let mut conn = conn;
    let _ = conn.write_all(line.as_bytes());
}

fn read_request(conn: &UnixStream) -> std::result::Result<Vec<String>, String> {
    // A client that connects and sends nothing must not hold the server's
    // shutdown, which waits for this thread.
    conn.set_read_timeout(Some(REQUEST_TIMEOUT))
        .map_err(|e| format!("admin connection: {e}"))?;
    let mut line = String::new();
    BufReader::new(conn.take(MAX_REQUEST_BYTES))
        .read_line(&mut line)
        .map_err(|e| format!("reading the request: {e}"))?;
    if !line.ends_with('\n') {
        return Err(format!(
            "a request is one line of at most {MAX_REQUEST_BYTES} bytes"
        ));
    }
    let req: Request =
        serde_json::from_str(&line).map_err(|e| format!("malformed request: {e}"))?;
    Ok(req.args)
}

/// Data-directory options, which a served command may not carry (contract 2):
/// the first argument that is one, named as clap knows them, so that a flag
/// added to [`DataDirArgs`](crate::datadir::DataDirArgs) is refused too.
fn data_dir_option(args: &[String]) -> Option<&str> {
    let cmd =
        <crate::datadir::DataDirArgs as clap::Args>::augment_args(clap::Command::new("strata"));
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    args.iter().map(String::as_str).find(|a| {
        a.strip_prefix("--")
            .map(|rest| rest.split('=').next().unwrap_or(rest))
            .is_some_and(|name| longs.contains(&name))
    })
}

fn run_served(args: Vec<String>, data_dir: &Path, db: Arc<Database>) -> Answer {
    let fail = |stderr: String, code: u8| Answer {
        stdout: String::new(),
        stderr,
        code,
    };
    if let Some(opt) = data_dir_option(&args) {
        return fail(
            format!(
                "error: {opt}: the server owning {} runs with its own settings; \
                 give the command without data-directory options\n",
                data_dir.display()
            ),
            1,
        );
    }
    let cli = match <crate::Cli as clap::Parser>::try_parse_from(
        std::iter::once("strata".to_string()).chain(args),
    ) {
        Ok(cli) => cli,
        Err(e) => return fail(e.render().to_string(), 2),
    };
    if !served(&cli.command) {
        return fail(
            format!(
                "error: {} does not run against a running server; stop it first\n",
                cli.command.name()
            ),
            1,
        );
    }
    let (result, mut captured) =
        serve_command(db, || crate::dispatch(cli.command, data_dir.to_path_buf()));
    let code = match result {
        Ok(()) => 0,
        Err(e) => {
            captured.stderr.push_str(&format!("error: {e}\n"));
            1
        }
    };
    Answer {
        stdout: captured.stdout,
        stderr: captured.stderr,
        code,
    }
}

/// The commands a server runs for the CLI: the admin commands that work on
/// its tables. The rest either open the directory for their own use
/// (`stress`, `cql`, `serve`, schema changes, imports, repairs) or need none.
pub fn served(cmd: &crate::Command) -> bool {
    use crate::Command as C;
    matches!(
        cmd,
        C::Compact { .. }
            | C::Garbagecollect { .. }
            | C::Compactionstats { .. }
            | C::Compactionhistory { .. }
            | C::Tablestats { .. }
            | C::Flush { .. }
            | C::Verify { .. }
            | C::Scrub { .. }
            | C::Upgradesstables { .. }
            | C::Traincompressiondictionary { .. }
            | C::Snapshot { .. }
            | C::Listsnapshots { .. }
            | C::Clearsnapshot { .. }
            | C::Info(_)
            | C::Status(_)
            | C::Getsstables(_)
            | C::Tablehistograms(_)
            | C::Setcompactionthroughput(_)
            | C::Getcompactionthroughput { .. }
            | C::Disableautocompaction(_)
            | C::Enableautocompaction(_)
            | C::Statusautocompaction(_)
            | C::Stop(_)
            | C::Drain { .. }
            | C::Sstable(crate::sstable_cmd::SstableCommand::Expiredblockers { .. })
    )
}

// ---------------------------------------------------------------------------
// The CLI's side

/// A connection to the admin socket of the running server that owns
/// `data_dir`; `None` when there is none (a killed server's socket refuses
/// connections).
fn connect_to_owner(data_dir: &Path) -> Option<UnixStream> {
    let path = data_dir.join(SOCKET_NAME);
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_socket()) {
        return None;
    }
    UnixStream::connect(&path).ok()
}

/// Whether a running server owns `data_dir`.
pub fn server_owns(data_dir: &Path) -> bool {
    connect_to_owner(data_dir).is_some()
}

/// When a server owns `data_dir` and listens on its admin socket, sends it
/// this process's command line (less `--data-dir`), prints the answer and
/// returns its exit code. `None`: no server there; the command runs offline.
pub fn forward(data_dir: &Path) -> Option<std::process::ExitCode> {
    // None for a killed server's socket too: the offline path takes the lock.
    let conn = connect_to_owner(data_dir)?;
    let args: std::result::Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(std::ffi::OsString::into_string)
        .collect();
    let Ok(args) = args else {
        eprintln!("error: the command line is not UTF-8, which the admin endpoint needs");
        return Some(std::process::ExitCode::FAILURE);
    };
    Some(match exchange(conn, strip_data_dir(args)) {
        Ok(a) => {
            print!("{}", a.stdout);
            eprint!("{}", a.stderr);
            let _ = std::io::stdout().flush();
            std::process::ExitCode::from(a.code)
        }
        Err(e) => {
            eprintln!(
                "error: the server owning {} did not answer: {e}",
                data_dir.display()
            );
            std::process::ExitCode::FAILURE
        }
    })
}

/// The command line without `--data-dir DIR` / `--data-dir=DIR` (the server
/// has its own).
fn strip_data_dir(args: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == "--data-dir" {
            it.next();
        } else if !a.starts_with("--data-dir=") {
            out.push(a);
        }
    }
    out
}

fn exchange(mut conn: UnixStream, args: Vec<String>) -> std::io::Result<Answer> {
    let mut line = serde_json::to_string(&Request { args }).map_err(std::io::Error::other)?;
    line.push('\n');
    conn.write_all(line.as_bytes())?;
    let mut answer = String::new();
    BufReader::new(conn.take(MAX_ANSWER_BYTES)).read_line(&mut answer)?;
    serde_json::from_str(&answer).map_err(|e| {
        std::io::Error::other(if answer.is_empty() {
            "the connection closed without an answer".to_string()
        } else {
            format!("malformed answer: {e}")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn data_dir_is_stripped_in_both_spellings() {
        assert_eq!(
            strip_data_dir(v(&[
                "--data-dir",
                "/d",
                "tablestats",
                "--data-dir=/e",
                "--json"
            ])),
            v(&["tablestats", "--json"])
        );
    }

    #[test]
    fn data_dir_options_are_found() {
        assert_eq!(
            data_dir_option(&v(&["compact", "--commitlog-sync=batch"])),
            Some("--commitlog-sync=batch")
        );
        assert_eq!(
            data_dir_option(&v(&["compact", "--chunk-cache-mb", "1"])),
            Some("--chunk-cache-mb")
        );
        assert_eq!(
            data_dir_option(&v(&[
                "compact",
                "--allow-unsafe-aggressive-sstable-expiration"
            ])),
            Some("--allow-unsafe-aggressive-sstable-expiration")
        );
        assert_eq!(data_dir_option(&v(&["compact", "ks.t"])), None);
    }

    #[test]
    fn output_is_captured_only_while_serving() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::open(dir.path(), crate::admin::db_options()).unwrap());
        let ((), cap) = serve_command(db, || {
            outln!("to stdout {}", 1);
            errln!("to stderr");
        });
        assert_eq!(cap.stdout, "to stdout 1\n");
        assert_eq!(cap.stderr, "to stderr\n");
        assert!(CAPTURE.with(|c| c.borrow().is_none()));
        assert!(SERVED_DB.with(|s| s.borrow().is_none()));
    }
}
