//! `strata cql`: a CQL shell in the same binary, as cqlsh is to Cassandra.
//!
//! Given a HOST (and PORT), it connects to a running server as cqlsh does
//! (protocol v4, `-u`/`-p` for `PasswordAuthenticator`, `--ssl` with a CA
//! file); otherwise it opens the data directory (`--data-dir` or the
//! default) itself and runs statements through the library's executor, the
//! same code a server runs for its clients, so a statement means the same
//! thing either way. Statements come from `-e`, from `-f FILE`, or from an
//! interactive prompt with line editing and history; results print as cqlsh
//! prints them (a table, then `(N rows)`), errors as cqlsh reports a server's.
//!
//! Contract:
//! 1. Every statement of a script runs in order; the first error stops a
//!    `-e`/`-f` run with a non-zero exit (cqlsh's behaviour), while the
//!    interactive prompt reports it and goes on.
//! 2. A page-by-page result is fetched whole (pages of 100 rows, cqlsh's
//!    default), so `SELECT * FROM t` prints every row.
//! 3. Served and embedded print the same bytes for the same statements: both
//!    results reach the same formatting as the executor's values (the
//!    client decodes RESULT into them).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use strata::query::{
    Authenticator, ColumnType, Executor, NodeInfo, QueryParams, QueryResult, Response, Rows,
    Session,
};
use strata::types::{self, CqlType, Value};
use strata_server::client::{Client, ClientError, ClientOptions};

/// Arguments of `strata cql`.
#[derive(Args, Debug, Clone)]
pub struct CqlArgs {
    /// A running server to connect to (as cqlsh's HOST); without it the
    /// shell opens the data directory itself.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// The server's CQL port.
    #[arg(value_name = "PORT", default_value_t = 9042, requires = "host")]
    pub port: u16,
    /// Statements to run (separated by `;`), then exit.
    #[arg(short = 'e', long = "execute", value_name = "STATEMENTS")]
    pub execute: Option<String>,
    /// A file of statements to run, then exit.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Keyspace to use first (`USE`).
    #[arg(short = 'k', long = "keyspace")]
    pub keyspace: Option<String>,
    /// Role to log in as, when the server requires authentication.
    #[arg(short = 'u', long = "username", requires_all = ["host", "password"])]
    pub username: Option<String>,
    /// The role's password.
    #[arg(short = 'p', long = "password", requires_all = ["host", "username"])]
    pub password: Option<String>,
    /// Connect with TLS, verifying the server against --certfile.
    #[arg(long, requires_all = ["host", "certfile"])]
    pub ssl: bool,
    /// PEM file of the CA certificates to trust for --ssl (cqlsh's
    /// SSL_CERTFILE).
    #[arg(long, env = "SSL_CERTFILE", value_name = "FILE")]
    pub certfile: Option<PathBuf>,
    /// Seconds to wait for the connection, 1 to 3600.
    #[arg(long, default_value_t = 5, requires = "host",
          value_parser = crate::bounds::range(1u64, 3600, "an hour is past any connection worth waiting for"))]
    pub connect_timeout: u64,
    /// Seconds to wait for each answer, 1 to 86400.
    #[arg(long, default_value_t = 10, requires = "host",
          value_parser = crate::bounds::range(1u64, 86400, "a day is past any answer worth waiting for"))]
    pub request_timeout: u64,
}

impl CqlArgs {
    /// Whether the shell connects to a server rather than opening a
    /// data directory.
    pub fn connects(&self) -> bool {
        self.host.is_some()
    }
}

/// Rows per page when a result is fetched (cqlsh's default page size).
const PAGE_ROWS: u32 = 100;

/// The executor of a shell or command that opened the data directory itself
/// (no server): one local node, no authentication.
pub(crate) fn embedded_executor(db: &Arc<strata::db::Database>) -> strata::Result<Executor> {
    Executor::new(
        db.clone(),
        NodeInfo {
            listen_address: std::net::IpAddr::from([127, 0, 0, 1]),
            native_port: 0,
            cluster_name: "Strata".to_string(),
            data_center: "datacenter1".to_string(),
            rack: "rack1".to_string(),
            release_version: strata::query::RELEASE_VERSION.to_string(),
            host_id: [0; 16],
        },
        Authenticator::AllowAll,
    )
}

pub fn run(data_dir: &Path, args: CqlArgs) -> strata::Result<()> {
    if let Some(host) = &args.host {
        let opts = ClientOptions {
            host: host.clone(),
            port: args.port,
            credentials: args.username.clone().zip(args.password.clone()),
            tls_ca: if args.ssl {
                args.certfile.clone()
            } else {
                None
            },
            connect_timeout: Duration::from_secs(args.connect_timeout),
            request_timeout: Duration::from_secs(args.request_timeout),
        };
        let client = Client::connect(&opts)
            .map_err(|e| strata::Error::InvalidInput(format!("Connection error: {e}")))?;
        let mut shell = Shell {
            backend: Backend::Served {
                client,
                keyspace: None,
            },
            greeting: format!("{host}:{}", args.port),
        };
        return shell.run(&args);
    }
    let db = match crate::open_db(data_dir) {
        Ok(db) => Arc::new(db),
        Err(e) if crate::remote::server_owns(data_dir) => {
            return Err(strata::Error::InvalidInput(format!(
                "{e}\na server owns {}: connect to it with `strata cql HOST PORT`",
                data_dir.display()
            )))
        }
        Err(e) => return Err(e),
    };
    let executor = embedded_executor(&db)?;
    let mut shell = Shell {
        backend: Backend::Embedded {
            executor: Box::new(executor),
            session: Session::default(),
        },
        greeting: data_dir.display().to_string(),
    };
    let result = shell.run(&args);
    drop(shell);
    let closed = match Arc::try_unwrap(db) {
        Ok(db) => db.close(),
        Err(_) => Ok(()),
    };
    result.and(closed)
}

/// Where statements run.
enum Backend {
    /// This process's executor on the opened data directory.
    Embedded {
        executor: Box<Executor>,
        session: Session,
    },
    /// A server over the native protocol; the keyspace its last `USE` set,
    /// for the prompt.
    Served {
        client: Client,
        keyspace: Option<String>,
    },
}

/// A statement's failure, as cqlsh prints it.
fn server_error(kind: strata::cql::CqlErrorKind, message: &str) -> strata::Error {
    strata::Error::InvalidInput(format!(
        "{}: Error from server: code={:04X} [{}] message=\"{}\"",
        error_class(kind),
        kind.code(),
        kind.spec_name(),
        message
    ))
}

impl Backend {
    fn query(&mut self, text: &str, params: &QueryParams) -> strata::Result<Response> {
        match self {
            Backend::Embedded { executor, session } => executor
                .query(session, text, params)
                .map_err(|e| server_error(e.kind, &e.message)),
            Backend::Served { client, keyspace } => {
                let response = client
                    .query(text, params.page_size, params.paging_state.as_deref())
                    .map_err(|e| match e {
                        ClientError::Server { kind, message } => server_error(kind, &message),
                        ClientError::Protocol(m) => {
                            strata::Error::InvalidInput(format!("Connection error: {m}"))
                        }
                    })?;
                if let QueryResult::SetKeyspace(ks) = &response.result {
                    *keyspace = Some(ks.clone());
                }
                Ok(response)
            }
        }
    }

    fn keyspace(&self) -> Option<&str> {
        match self {
            Backend::Embedded { session, .. } => session.keyspace.as_deref(),
            Backend::Served { keyspace, .. } => keyspace.as_deref(),
        }
    }
}

struct Shell {
    backend: Backend,
    /// What the interactive prompt says it is connected to.
    greeting: String,
}

impl Shell {
    fn run(&mut self, args: &CqlArgs) -> strata::Result<()> {
        if let Some(ks) = &args.keyspace {
            self.statement(&format!("USE {}", strata::cql::ddl::cql_name(ks)))?;
        }
        if let Some(text) = &args.execute {
            return self.script(text, "<stdin>");
        }
        if let Some(file) = &args.file {
            let text = std::fs::read_to_string(file).map_err(|e| strata::Error::io(file, e))?;
            return self.script(&text, &file.display().to_string());
        }
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            let mut text = String::new();
            for line in stdin.lock().lines() {
                let line = line.map_err(|e| strata::Error::io("<stdin>", e))?;
                text.push_str(&line);
                text.push('\n');
            }
            return self.script(&text, "<stdin>");
        }
        self.interactive()
    }

    /// Runs every statement of `text` in order, stopping at the first error
    /// (contract 1).
    fn script(&mut self, text: &str, source: &str) -> strata::Result<()> {
        let ranges = strata::cql::split_statements(text).map_err(strata::Error::Cql)?;
        for (start, end) in ranges {
            let stmt = text[start..end].trim();
            if stmt.is_empty() {
                continue;
            }
            let line = text[..start].matches('\n').count() + 1;
            if let Err(e) = self.statement(stmt) {
                // cqlsh's `<stdin>:3:InvalidRequest: ...`, without the
                // error type's own prefix in the middle.
                let e = match e {
                    strata::Error::InvalidInput(m) => m,
                    other => other.to_string(),
                };
                return Err(strata::Error::InvalidInput(format!("{source}:{line}:{e}")));
            }
        }
        Ok(())
    }

    fn interactive(&mut self) -> strata::Result<()> {
        let mut editor = rustyline::DefaultEditor::new()
            .map_err(|e| strata::Error::InvalidInput(format!("terminal: {e}")))?;
        let history =
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".strata_cql_history"));
        if let Some(h) = &history {
            let _ = editor.load_history(h);
        }
        println!("Connected to Strata at {}.", self.greeting);
        println!("Use HELP for help.");
        let mut buffer = String::new();
        loop {
            let prompt = match (self.backend.keyspace(), buffer.is_empty()) {
                (_, false) => "   ... ".to_string(),
                (Some(ks), true) => format!("cqlsh:{ks}> "),
                (None, true) => "cqlsh> ".to_string(),
            };
            match editor.readline(&prompt) {
                Ok(line) => {
                    let trimmed = line.trim();
                    if buffer.is_empty() {
                        match trimmed.to_ascii_lowercase().trim_end_matches(';') {
                            "exit" | "quit" => break,
                            "help" => {
                                println!("Statements end with ';'. EXIT or QUIT leaves.");
                                continue;
                            }
                            _ => {}
                        }
                    }
                    buffer.push_str(&line);
                    buffer.push('\n');
                    if !trimmed.ends_with(';') {
                        continue;
                    }
                    let _ = editor.add_history_entry(buffer.trim());
                    let text = std::mem::take(&mut buffer);
                    if let Err(e) = self.script(&text, "<stdin>") {
                        eprintln!("{e}");
                    }
                }
                Err(rustyline::error::ReadlineError::Interrupted) => buffer.clear(),
                Err(rustyline::error::ReadlineError::Eof) => break,
                Err(e) => return Err(strata::Error::InvalidInput(format!("terminal: {e}"))),
            }
        }
        if let Some(h) = &history {
            let _ = editor.save_history(h);
        }
        Ok(())
    }

    /// Runs one statement and prints its result, fetching every page.
    fn statement(&mut self, text: &str) -> strata::Result<()> {
        let mut params = QueryParams {
            page_size: Some(PAGE_ROWS),
            ..QueryParams::default()
        };
        let mut all: Option<Rows> = None;
        let mut warnings = Vec::new();
        loop {
            let Response {
                result,
                warnings: w,
            } = self.backend.query(text, &params)?;
            warnings.extend(w);
            match result {
                QueryResult::Rows(page) => {
                    let next = page.paging_state.clone();
                    match &mut all {
                        None => all = Some(page),
                        Some(acc) => acc.rows.extend(page.rows),
                    }
                    match next {
                        Some(state) => params.paging_state = Some(state),
                        None => break,
                    }
                }
                _ => break,
            }
        }
        if !warnings.is_empty() {
            eprintln!("Warnings :");
            for w in &warnings {
                eprintln!("{w}");
            }
            eprintln!();
        }
        if let Some(rows) = all {
            let mut out = std::io::stdout().lock();
            print_rows(&mut out, &rows).map_err(|e| strata::Error::io("<stdout>", e))?;
        }
        Ok(())
    }
}

/// The exception class cqlsh names for an error code.
fn error_class(kind: strata::cql::CqlErrorKind) -> &'static str {
    use strata::cql::CqlErrorKind as K;
    match kind {
        K::SyntaxError => "SyntaxException",
        K::Invalid => "InvalidRequest",
        K::ConfigError => "ConfigurationException",
        K::AlreadyExists => "AlreadyExists",
        K::Unauthorized => "Unauthorized",
        K::BadCredentials => "AuthenticationFailed",
        K::TruncateError => "TruncateError",
        _ => "ServerError",
    }
}

/// Prints rows as cqlsh does: names left-aligned, values right-aligned,
/// ` | ` between columns, a dashed rule, a blank line and `(N rows)`.
pub fn print_rows(out: &mut dyn Write, rows: &Rows) -> std::io::Result<()> {
    let names: Vec<String> = rows
        .metadata
        .columns
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let cells: Vec<Vec<String>> = rows
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .zip(&rows.metadata.columns)
                .map(|(v, c)| match v {
                    None => "null".to_string(),
                    Some(b) => format_value(&c.ty, b),
                })
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
    for r in &cells {
        for (w, v) in widths.iter_mut().zip(r) {
            *w = (*w).max(v.chars().count());
        }
    }
    writeln!(out)?;
    let header: Vec<String> = names
        .iter()
        .zip(&widths)
        .map(|(n, w)| format!("{n:<w$}"))
        .collect();
    writeln!(out, " {}", header.join(" | ").trim_end())?;
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    writeln!(out, "-{}-", rule.join("-+-"))?;
    for r in &cells {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:>w$}"))
            .collect();
        writeln!(out, " {}", line.join(" | "))?;
    }
    writeln!(out)?;
    writeln!(out, "({} rows)", cells.len())?;
    Ok(())
}

/// A list whose entries may be null (`-1` lengths), printed as cqlsh prints
/// it (`[3600, null]`); `None` if the bytes are not such a list.
fn list_with_nulls(ty: &ColumnType, bytes: &[u8]) -> Option<String> {
    let ColumnType::List(element) = ty else {
        return None;
    };
    let mut rest = bytes;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
        rest = tail;
        Some(head)
    };
    let count = i32::from_be_bytes(take(4)?.try_into().ok()?);
    let mut items = Vec::new();
    for _ in 0..count.max(0) {
        let len = i32::from_be_bytes(take(4)?.try_into().ok()?);
        if len < 0 {
            items.push("null".to_string());
        } else {
            items.push(format_value(element, take(len as usize)?));
        }
    }
    rest.is_empty().then(|| format!("[{}]", items.join(", ")))
}

/// A value as cqlsh prints it.
fn format_value(ty: &ColumnType, bytes: &[u8]) -> String {
    match ty.unfrozen() {
        ColumnType::Native(t) => match types::deserialize(t, bytes) {
            Ok(v) => format_native(t.clone(), &v),
            Err(_) => format!("<invalid {} value>", t.name()),
        },
        // Collections, tuples, UDTs, vectors: their CQL literal.
        other => match other.stored_type().map(|t| types::deserialize(&t, bytes)) {
            Some(Ok(v)) => types::format_value(&v),
            // `ttl()` of a non-frozen collection: a list with null entries
            // (elements without a TTL), which no stored list holds.
            _ if matches!(other, ColumnType::List(_))
                && list_with_nulls(other, bytes).is_some() =>
            {
                list_with_nulls(other, bytes).unwrap_or_default()
            }
            _ => format!("<invalid {} value>", other.to_cql()),
        },
    }
}

fn format_native(t: CqlType, v: &Value) -> String {
    match v {
        Value::Boolean(b) => if *b { "True" } else { "False" }.to_string(),
        Value::Timestamp(ms) => {
            // cqlsh: "2024-05-01 10:00:00.000000+0000".
            let text = types::format_value(v);
            match text.split_once('T') {
                Some((d, rest)) => {
                    let time = rest.trim_end_matches('Z');
                    format!("{d} {time}000+0000")
                }
                None => ms.to_string(),
            }
        }
        _ => {
            let _ = t;
            types::format_value(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn collections_print_as_cql_literals() {
        let set = CqlType::Set {
            element: Arc::new(CqlType::Text),
            frozen: false,
        };
        let v = types::serialize(&Value::Set(vec![
            Value::Text("a".into()),
            Value::Text("it's".into()),
        ]));
        assert_eq!(format_value(&ColumnType::of(&set), &v), "{'a', 'it''s'}");
        let map = CqlType::Map {
            key: Arc::new(CqlType::Text),
            value: Arc::new(CqlType::Int),
            frozen: true,
        };
        let v = types::serialize(&Value::Map(vec![(Value::Text("k".into()), Value::Int(1))]));
        assert_eq!(format_value(&ColumnType::of(&map), &v), "{'k': 1}");
        let ttls = ColumnType::List(Box::new(ColumnType::Native(CqlType::Int)));
        let mut v = 2i32.to_be_bytes().to_vec();
        v.extend_from_slice(&4i32.to_be_bytes());
        v.extend_from_slice(&3600i32.to_be_bytes());
        v.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(format_value(&ttls, &v), "[3600, null]");
        assert_eq!(
            format_value(&ColumnType::of(&map), &[0, 0, 0, 9]),
            "<invalid map<text, int> value>"
        );
    }
}
