//! `strata stress user --profile FILE --ops insert=1,NAME=3`: a workload on
//! the user's own schema, described in cassandra-stress's YAML profile format.
//!
//! Owns: the profile's parsing and checks, the value generators, the rows of
//! each partition, and the two kinds of operation (an insert of a
//! partition's rows, a named query bound from one of its rows). The driver
//! loop, pacing and histograms are [`crate::stress::run_workload`]'s; the
//! statements run through the CQL executor, as a client's would.
//!
//! The profile (cassandra-stress's keys; any other key is refused, never
//! ignored):
//! - `keyspace`, `table`: names; `keyspace_definition`, `table_definition`:
//!   the CQL run when they do not exist yet (an existing table is used as it
//!   is);
//! - `columnspec`: per column, `size` (text and blob lengths, default
//!   `uniform(4..8)`), `population` (how many distinct values, default
//!   `uniform(1..100B)`), `cluster` (clustering columns: values per
//!   partition, default `fixed(1)`);
//! - `insert`: `partitions` per insert (default `fixed(1)`), `select`, the
//!   share of a partition's rows each insert writes (default `fixed(1)/1`),
//!   `batchtype` (`LOGGED`, the default, or `UNLOGGED`);
//! - `queries`: `NAME: {cql: ..., fields: samerow|multirow}`.
//!
//! Distributions: `fixed(N)`, `uniform(MIN..MAX)`, `gaussian(MIN..MAX[,S])`
//! (mean in the middle, standard deviation the half-range over S, 3 by
//! default), `exp(MIN..MAX)`, each optionally prefixed by `~` (inverted);
//! numbers take `k`, `m` and `b` suffixes (thousands, millions, billions) as
//! cassandra-stress's do. `extreme` and `qextreme` are refused.
//!
//! Invariants:
//! 1. Determinism: a partition's key, its clustering values and its rows'
//!    values are functions of (seed, partition number): an insert run and a
//!    query run with the same seed and partitions meet the same rows.
//! 2. A value is a function of (column, value index): the index is drawn
//!    from the column's population, so a population of N gives at most N
//!    distinct values, and the value's length (text, blob) comes from the
//!    same index through `size`.
//! 3. Every `?` of a query binds a column of the table by its name (the
//!    prepared statement's bind variables); a query binding anything else is
//!    refused before the run.
//! 4. Types with no generator (collections, UDTs, tuples, vectors,
//!    counters, `duration`, `time`) are refused at setup, naming the column.

use crate::values::splitmix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::Arc;
use strata::cql::ast::BatchKind;
use strata::db::Database;
use strata::query::executor::{BatchItem, Executor, Prepared};
use strata::query::{BoundValue, QueryParams, QueryResult, Session, Values};
use strata::schema::{ColumnKind, TableSchema};
use strata::table::Table;
use strata::types::{self, CqlType, Value};
use strata::{Error, Result};

/// Most rows one partition of a profile may hold (the product of its
/// clustering columns' `cluster` counts): an insert holds them in memory.
pub const MAX_ROWS_PER_PARTITION: u64 = 1_000_000;
/// Longest generated text or blob value.
const MAX_VALUE_SIZE: i64 = 16 << 20;

fn bad(what: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("stress profile: {what}"))
}

/// A cassandra-stress distribution over whole numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Dist {
    kind: DistKind,
    min: i64,
    max: i64,
    /// `~`: the distribution mirrored within its range.
    inverted: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum DistKind {
    Fixed,
    Uniform,
    /// Standard deviation = half-range / this.
    Gaussian(f64),
    Exp,
}

/// `10`, `10k`, `5M`, `100B` (thousands, millions, billions).
fn parse_count(text: &str) -> Result<i64> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&t[..i], 1_000),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&t[..i], 1_000_000),
        Some((i, c)) if c.eq_ignore_ascii_case(&'b') => (&t[..i], 1_000_000_000),
        _ => (t, 1),
    };
    num.trim()
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| {
            bad(format!(
                "'{text}' is not a whole number (k, m, b suffixes allowed)"
            ))
        })
}

impl Dist {
    pub fn fixed(n: i64) -> Dist {
        Dist {
            kind: DistKind::Fixed,
            min: n,
            max: n,
            inverted: false,
        }
    }

    fn uniform(min: i64, max: i64) -> Dist {
        Dist {
            kind: DistKind::Uniform,
            min,
            max,
            inverted: false,
        }
    }

    pub fn parse(text: &str) -> Result<Dist> {
        let t = text.trim();
        let (inverted, t) = match t.strip_prefix('~') {
            Some(rest) => (true, rest.trim()),
            None => (false, t),
        };
        let open = t
            .find('(')
            .ok_or_else(|| bad(format!("'{text}': expected NAME(...)")))?;
        let body = t[open + 1..]
            .strip_suffix(')')
            .ok_or_else(|| bad(format!("'{text}': missing ')'")))?;
        let name = t[..open].trim().to_ascii_lowercase();
        let mut args = body.split(',');
        let range = args.next().unwrap_or("");
        let extra: Vec<&str> = args.collect();
        let range_of = |r: &str| -> Result<(i64, i64)> {
            let (a, b) = r
                .split_once("..")
                .ok_or_else(|| bad(format!("'{text}': expected MIN..MAX")))?;
            let (a, b) = (parse_count(a)?, parse_count(b)?);
            if a > b {
                return Err(bad(format!("'{text}': MIN is above MAX")));
            }
            Ok((a, b))
        };
        let kind = match name.as_str() {
            "fixed" => {
                if !extra.is_empty() {
                    return Err(bad(format!("'{text}': fixed takes one number")));
                }
                let n = parse_count(range)?;
                return Ok(Dist {
                    inverted,
                    ..Dist::fixed(n)
                });
            }
            "uniform" => DistKind::Uniform,
            "gaussian" | "gauss" | "normal" | "norm" => {
                let s = match extra.as_slice() {
                    [] => 3.0,
                    [s] => s
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|s| *s > 0.0 && s.is_finite())
                        .ok_or_else(|| {
                            bad(format!(
                                "'{text}': the deviation divisor is a positive number"
                            ))
                        })?,
                    _ => {
                        return Err(bad(format!(
                            "'{text}': gaussian(MIN..MAX) or gaussian(MIN..MAX,STDVRNG)"
                        )))
                    }
                };
                DistKind::Gaussian(s)
            }
            "exp" => DistKind::Exp,
            "extreme" | "qextreme" | "weibull" => {
                return Err(bad(format!(
                    "'{text}': {name} is not implemented; use uniform, gaussian, exp or fixed"
                )))
            }
            other => {
                return Err(bad(format!(
                    "'{text}': unknown distribution '{other}' (fixed, uniform, gaussian, exp)"
                )))
            }
        };
        if !extra.is_empty() && !matches!(kind, DistKind::Gaussian(_)) {
            return Err(bad(format!("'{text}': {name} takes MIN..MAX only")));
        }
        let (min, max) = range_of(range)?;
        Ok(Dist {
            kind,
            min,
            max,
            inverted,
        })
    }

    /// One draw, within `min..=max`.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> i64 {
        use rand_distr::Distribution;
        let (min, max) = (self.min, self.max);
        let span = (max - min) as f64;
        let v = match self.kind {
            DistKind::Fixed => min,
            DistKind::Uniform => rng.gen_range(min..=max),
            DistKind::Gaussian(s) => {
                let mean = min as f64 + span / 2.0;
                let sd = (span / 2.0 / s).max(f64::MIN_POSITIVE);
                match rand_distr::Normal::new(mean, sd) {
                    Ok(n) => (n.sample(rng).round() as i64).clamp(min, max),
                    Err(_) => min,
                }
            }
            DistKind::Exp => {
                // 99.9% of draws below MAX, as a mean of span / ln(1000).
                let u: f64 = rng.gen_range(0.0..1.0);
                let x = -(1.0 - u).ln() * span / 1000f64.ln();
                (min as f64 + x).round().min(max as f64) as i64
            }
        };
        if self.inverted {
            max - (v - min)
        } else {
            v
        }
    }
}

/// `DIST/DENOMINATOR`: a share, e.g. `uniform(1..10)/10`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    dist: Dist,
    denominator: i64,
}

impl Ratio {
    fn parse(text: &str) -> Result<Ratio> {
        let (d, den) = text
            .rsplit_once('/')
            .ok_or_else(|| bad(format!("'{text}': a share is DIST/N, e.g. fixed(1)/1")))?;
        let denominator = parse_count(den)?;
        let dist = Dist::parse(d)?;
        if denominator <= 0 || dist.min < 0 || dist.max > denominator {
            return Err(bad(format!("'{text}': the share must lie in 0..=1")));
        }
        Ok(Ratio { dist, denominator })
    }

    fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        self.dist.sample(rng) as f64 / self.denominator as f64
    }
}

/// How a query's markers take their values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fields {
    /// All from one row of the partition.
    SameRow,
    /// Each from a row of the partition chosen on its own.
    MultiRow,
}

#[derive(Clone, Debug)]
pub struct QuerySpec {
    pub name: String,
    pub cql: String,
    pub fields: Fields,
}

#[derive(Clone, Debug, Default)]
pub struct ColumnSpec {
    pub size: Option<Dist>,
    pub population: Option<Dist>,
    pub cluster: Option<Dist>,
}

/// A parsed profile (module docs).
#[derive(Clone, Debug)]
pub struct Profile {
    pub keyspace: String,
    pub keyspace_definition: Option<String>,
    pub table: String,
    pub table_definition: Option<String>,
    pub columns: BTreeMap<String, ColumnSpec>,
    pub partitions: Dist,
    pub select: Ratio,
    pub batch: BatchKind,
    pub queries: Vec<QuerySpec>,
}

fn str_of<'a>(v: &'a yaml_rust2::Yaml, what: &str) -> Result<&'a str> {
    v.as_str()
        .ok_or_else(|| bad(format!("{what} must be text")))
}

/// A distribution written as text, or as a bare number (cassandra-stress
/// accepts `size: 10` for `fixed(10)`).
fn dist_of(v: &yaml_rust2::Yaml, what: &str) -> Result<Dist> {
    match v {
        yaml_rust2::Yaml::Integer(n) => Ok(Dist::fixed(*n)),
        _ => Dist::parse(str_of(v, what)?).map_err(|e| bad(format!("{what}: {e}"))),
    }
}

fn keys_of<'a>(
    v: &'a yaml_rust2::Yaml,
    what: &str,
    allowed: &[&str],
) -> Result<Vec<(&'a str, &'a yaml_rust2::Yaml)>> {
    let h = v
        .as_hash()
        .ok_or_else(|| bad(format!("{what} must be a map")))?;
    let mut out = Vec::new();
    for (k, v) in h {
        let k = k
            .as_str()
            .ok_or_else(|| bad(format!("{what}: keys must be text")))?;
        if !allowed.contains(&k) {
            return Err(bad(format!(
                "{what}: '{k}' is not a key Strata reads (it reads {})",
                allowed.join(", ")
            )));
        }
        out.push((k, v));
    }
    Ok(out)
}

impl Profile {
    pub fn parse(text: &str) -> Result<Profile> {
        let docs = yaml_rust2::YamlLoader::load_from_str(text)
            .map_err(|e| bad(format!("not YAML: {e}")))?;
        let [doc] = docs.as_slice() else {
            return Err(bad("expected one YAML document"));
        };
        let mut keyspace = None;
        let mut keyspace_definition = None;
        let mut table = None;
        let mut table_definition = None;
        let mut columns = BTreeMap::new();
        let mut partitions = Dist::fixed(1);
        let mut select = Ratio {
            dist: Dist::fixed(1),
            denominator: 1,
        };
        let mut batch = BatchKind::Logged;
        let mut queries = Vec::new();
        let top = [
            "keyspace",
            "keyspace_definition",
            "table",
            "table_definition",
            "columnspec",
            "insert",
            "queries",
        ];
        for (k, v) in keys_of(doc, "the profile", &top)? {
            match k {
                "keyspace" => keyspace = Some(str_of(v, k)?.trim().to_string()),
                "keyspace_definition" => keyspace_definition = Some(str_of(v, k)?.to_string()),
                "table" => table = Some(str_of(v, k)?.trim().to_string()),
                "table_definition" => table_definition = Some(str_of(v, k)?.to_string()),
                "columnspec" => {
                    let list = v.as_vec().ok_or_else(|| bad("columnspec must be a list"))?;
                    for c in list {
                        let mut name = None;
                        let mut spec = ColumnSpec::default();
                        for (ck, cv) in keys_of(
                            c,
                            "a columnspec entry",
                            &["name", "size", "population", "cluster"],
                        )? {
                            let what = format!("columnspec {ck}");
                            match ck {
                                "name" => name = Some(str_of(cv, "columnspec name")?.to_string()),
                                "size" => spec.size = Some(dist_of(cv, &what)?),
                                "population" => spec.population = Some(dist_of(cv, &what)?),
                                _ => spec.cluster = Some(dist_of(cv, &what)?),
                            }
                        }
                        let name = name.ok_or_else(|| bad("a columnspec entry has no name"))?;
                        if columns.insert(name.clone(), spec).is_some() {
                            return Err(bad(format!("columnspec names '{name}' twice")));
                        }
                    }
                }
                "insert" => {
                    for (ik, iv) in keys_of(v, "insert", &["partitions", "select", "batchtype"])? {
                        match ik {
                            "partitions" => partitions = dist_of(iv, "insert partitions")?,
                            "select" => select = Ratio::parse(str_of(iv, "insert select")?)?,
                            _ => {
                                batch = match str_of(iv, "insert batchtype")?
                                    .trim()
                                    .to_ascii_uppercase()
                                    .as_str()
                                {
                                    "LOGGED" => BatchKind::Logged,
                                    "UNLOGGED" => BatchKind::Unlogged,
                                    other => {
                                        return Err(bad(format!(
                                            "insert batchtype '{other}': LOGGED or UNLOGGED"
                                        )))
                                    }
                                }
                            }
                        }
                    }
                }
                _ => {
                    let h = v.as_hash().ok_or_else(|| bad("queries must be a map"))?;
                    for (name, q) in h {
                        let name = str_of(name, "a query name")?.to_string();
                        if name == "insert" {
                            return Err(bad("a query cannot be named 'insert'"));
                        }
                        let mut cql = None;
                        let mut fields = Fields::SameRow;
                        for (qk, qv) in keys_of(q, &format!("query {name}"), &["cql", "fields"])? {
                            if qk == "cql" {
                                cql = Some(str_of(qv, "cql")?.trim().to_string());
                            } else {
                                fields = match str_of(qv, "fields")?.trim() {
                                    "samerow" => Fields::SameRow,
                                    "multirow" => Fields::MultiRow,
                                    other => {
                                        return Err(bad(format!(
                                            "query {name}: fields '{other}': samerow or multirow"
                                        )))
                                    }
                                };
                            }
                        }
                        let cql = cql.ok_or_else(|| bad(format!("query {name} has no cql")))?;
                        queries.push(QuerySpec { name, cql, fields });
                    }
                }
            }
        }
        let lower = |d: &Dist, what: &str, least: i64| -> Result<()> {
            if d.min < least {
                return Err(bad(format!("{what} must be at least {least}")));
            }
            Ok(())
        };
        lower(&partitions, "insert partitions", 1)?;
        for (name, c) in &columns {
            if let Some(s) = &c.size {
                lower(s, &format!("column {name} size"), 0)?;
                if s.max > MAX_VALUE_SIZE {
                    return Err(bad(format!("column {name} size: at most 16 MiB")));
                }
            }
            if let Some(p) = &c.population {
                lower(p, &format!("column {name} population"), 1)?;
            }
            if let Some(k) = &c.cluster {
                lower(k, &format!("column {name} cluster"), 1)?;
            }
        }
        Ok(Profile {
            keyspace: keyspace.ok_or_else(|| bad("no keyspace"))?,
            keyspace_definition,
            table: table.ok_or_else(|| bad("no table"))?,
            table_definition,
            columns,
            partitions,
            select,
            batch,
            queries,
        })
    }
}

/// One column's generator (invariant 2).
#[derive(Clone, Debug)]
struct Generator {
    name: String,
    ty: CqlType,
    size: Dist,
    population: Dist,
    cluster: Dist,
}

impl Generator {
    /// The value of index `index` (invariant 2).
    fn value(&self, index: i64) -> Value {
        let h = splitmix(index as u64 ^ splitmix(name_hash(&self.name)));
        let mut rng = ChaCha8Rng::seed_from_u64(h);
        let len = |rng: &mut ChaCha8Rng| self.size.sample(rng).max(0) as usize;
        match &self.ty {
            CqlType::Boolean => Value::Boolean(index % 2 == 1),
            CqlType::TinyInt => Value::TinyInt(index as i8),
            CqlType::SmallInt => Value::SmallInt(index as i16),
            CqlType::Int => Value::Int(index as i32),
            CqlType::BigInt => Value::BigInt(index),
            CqlType::Float => Value::Float(index as f32 / 64.0),
            CqlType::Double => Value::Double(index as f64 / 1024.0),
            CqlType::Text | CqlType::Ascii => {
                let n = len(&mut rng);
                let s: String = (0..n)
                    .map(|_| char::from(b'a' + rng.gen_range(0..26u8)))
                    .collect();
                if matches!(self.ty, CqlType::Ascii) {
                    Value::Ascii(s)
                } else {
                    Value::Text(s)
                }
            }
            CqlType::Blob => {
                let n = len(&mut rng);
                Value::Blob((0..n).map(|_| rng.gen()).collect())
            }
            CqlType::Uuid | CqlType::TimeUuid => {
                let mut b: [u8; 16] = rng.gen();
                // Version 4 (random) or 1 (time), RFC 4122 variant.
                let version = if matches!(self.ty, CqlType::Uuid) {
                    0x40
                } else {
                    0x10
                };
                b[6] = (b[6] & 0x0f) | version;
                b[8] = (b[8] & 0x3f) | 0x80;
                if matches!(self.ty, CqlType::Uuid) {
                    Value::Uuid(b)
                } else {
                    Value::TimeUuid(b)
                }
            }
            // Milliseconds from 2020-01-01 on.
            CqlType::Timestamp => Value::Timestamp(1_577_836_800_000 + index.rem_euclid(1 << 40)),
            CqlType::Date => Value::Date((1u32 << 31) + index.rem_euclid(3_650_000) as u32),
            CqlType::Inet => Value::Inet((index as u32).to_be_bytes().to_vec()),
            CqlType::Varint => Value::Varint(minimal_be(index)),
            CqlType::Decimal => Value::Decimal {
                scale: 2,
                unscaled: minimal_be(index),
            },
            // Refused at setup (invariant 4).
            _ => Value::Blob(Vec::new()),
        }
    }

    fn has_generator(ty: &CqlType) -> bool {
        matches!(
            ty,
            CqlType::Boolean
                | CqlType::TinyInt
                | CqlType::SmallInt
                | CqlType::Int
                | CqlType::BigInt
                | CqlType::Float
                | CqlType::Double
                | CqlType::Text
                | CqlType::Ascii
                | CqlType::Blob
                | CqlType::Uuid
                | CqlType::TimeUuid
                | CqlType::Timestamp
                | CqlType::Date
                | CqlType::Inet
                | CqlType::Varint
                | CqlType::Decimal
        )
    }
}

fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Two's complement, big-endian, minimal (as a varint is stored).
fn minimal_be(n: i64) -> Vec<u8> {
    let b = n.to_be_bytes();
    let mut i = 0;
    while i < 7 && ((b[i] == 0 && b[i + 1] & 0x80 == 0) || (b[i] == 0xff && b[i + 1] & 0x80 != 0)) {
        i += 1;
    }
    b[i..].to_vec()
}

/// One row of a partition: every column's value, in the table's column order.
type Row = Vec<Value>;

/// A profile bound to its table: the generators and prepared statements.
pub struct UserWorkload {
    profile: Profile,
    executor: Arc<Executor>,
    table: Arc<Table>,
    /// Every column of the table, partition key first, then clustering, then
    /// the rest (the schema's order).
    generators: Vec<Generator>,
    partition_key_count: usize,
    clustering_count: usize,
    insert: Arc<Prepared>,
    /// (prepared, index of each marker's column in `generators`, fields),
    /// in the profile's order.
    queries: Vec<(Prepared, Vec<usize>, Fields)>,
    seed: u64,
}

impl std::fmt::Debug for UserWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserWorkload")
            .field("queries", &self.query_names())
            .finish_non_exhaustive()
    }
}

/// What one operation did: rows written or returned.
pub struct UserOutcome {
    pub rows: u64,
    /// A query that returned nothing.
    pub empty: bool,
}

fn query_err(e: strata::query::QueryError) -> Error {
    Error::InvalidInput(e.to_string())
}

impl UserWorkload {
    /// Creates the keyspace and table if they do not exist (from the
    /// profile's definitions), checks every column has a generator and every
    /// query binds columns (invariants 3 and 4), and prepares the statements.
    pub fn setup(
        db: &Arc<Database>,
        executor: Arc<Executor>,
        profile: Profile,
        seed: u64,
    ) -> Result<UserWorkload> {
        let mut session = Session::default();
        let run = |session: &mut Session, cql: &str| -> Result<()> {
            executor
                .query(session, cql, &QueryParams::default())
                .map(|_| ())
                .map_err(|e| bad(format!("{}: {e}", cql.trim())))
        };
        if db.catalog().keyspace(&profile.keyspace).is_err() {
            let Some(def) = &profile.keyspace_definition else {
                return Err(bad(format!(
                    "keyspace {} does not exist and the profile has no keyspace_definition",
                    profile.keyspace
                )));
            };
            run(&mut session, def)?;
        }
        run(&mut session, &format!("USE \"{}\"", profile.keyspace))?;
        if db.table(&profile.keyspace, &profile.table).is_err() {
            let Some(def) = &profile.table_definition else {
                return Err(bad(format!(
                    "table {}.{} does not exist and the profile has no table_definition",
                    profile.keyspace, profile.table
                )));
            };
            run(&mut session, def)?;
        }
        let table = db.table(&profile.keyspace, &profile.table).map_err(|_| {
            bad(format!(
                "the table_definition did not create {}.{} (the profile's table)",
                profile.keyspace, profile.table
            ))
        })?;
        let schema = table.schema();
        let generators = generators(&schema, &profile)?;
        let names: Vec<String> = generators
            .iter()
            .map(|g| format!("\"{}\"", g.name))
            .collect();
        let insert_cql = format!(
            "INSERT INTO \"{}\".\"{}\" ({}) VALUES ({})",
            profile.keyspace,
            profile.table,
            names.join(", "),
            vec!["?"; names.len()].join(", ")
        );
        let insert = Arc::new(executor.prepare(&session, &insert_cql).map_err(query_err)?);
        let mut queries = Vec::new();
        for q in &profile.queries {
            let prepared = executor
                .prepare(&session, &q.cql)
                .map_err(|e| bad(format!("query {}: {e}", q.name)))?;
            let mut columns = Vec::new();
            for b in &prepared.bind {
                let i = generators
                    .iter()
                    .position(|g| g.name == b.name)
                    .ok_or_else(|| {
                        bad(format!(
                            "query {}: a marker binds '{}', which is not a column of {}.{}: \
                             stress binds each marker from a generated row",
                            q.name, b.name, profile.keyspace, profile.table
                        ))
                    })?;
                columns.push(i);
            }
            queries.push((prepared, columns, q.fields));
        }
        let partition_key_count = schema.partition_key_columns().count();
        let clustering_count = schema.clustering_columns().count();
        Ok(UserWorkload {
            profile,
            executor,
            table,
            generators,
            partition_key_count,
            clustering_count,
            insert,
            queries,
            seed,
        })
    }

    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The query names, in the profile's order.
    pub fn query_names(&self) -> Vec<&str> {
        self.profile
            .queries
            .iter()
            .map(|q| q.name.as_str())
            .collect()
    }

    /// Partition `p`'s key and clustering values (invariant 1), from which
    /// any of its rows is built alone: an operation builds only the rows it
    /// writes or binds, never the whole partition.
    fn partition(&self, p: u64) -> Partition {
        let base = splitmix(self.seed ^ splitmix(p.wrapping_add(1)));
        let pk = self.generators[..self.partition_key_count]
            .iter()
            .enumerate()
            .map(|(i, g)| draw(base, i as u64, g))
            .collect();
        let ck_gens = &self.generators
            [self.partition_key_count..self.partition_key_count + self.clustering_count];
        let clustering = ck_gens
            .iter()
            .enumerate()
            .map(|(j, g)| {
                let mut rng = ChaCha8Rng::seed_from_u64(splitmix(base ^ 0x636c_7573 ^ j as u64));
                let n = g.cluster.sample(&mut rng).max(1) as u64;
                (0..n)
                    .map(|k| draw(base, 1_000 + (j as u64) * 1_000_003 + k, g))
                    .collect()
            })
            .collect();
        Partition {
            base,
            pk,
            clustering,
        }
    }

    /// Row `r` of `part`: its key, the clustering values row `r` takes (`r`
    /// in mixed radix over the clustering columns' counts), its own values.
    fn row(&self, part: &Partition, r: u64) -> Row {
        let mut row = part.pk.clone();
        let mut rest = r;
        for vals in &part.clustering {
            let n = vals.len() as u64;
            row.push(vals[(rest % n) as usize].clone());
            rest /= n;
        }
        for (c, g) in self.generators[self.partition_key_count + self.clustering_count..]
            .iter()
            .enumerate()
        {
            row.push(draw(
                part.base,
                0x7265_6775_0000_0000 ^ (r << 16) ^ c as u64,
                g,
            ));
        }
        row
    }

    fn bound(values: &[Value]) -> Values {
        Values::Positional(
            values
                .iter()
                .map(|v| BoundValue::Value(types::serialize(v)))
                .collect(),
        )
    }

    /// An insert (module docs): `partitions` partitions from `p` on, each
    /// the `select` share of its rows, in one batch per partition.
    pub fn insert(&self, p: u64, partitions: u64, op: u64) -> Result<UserOutcome> {
        let mut rng = ChaCha8Rng::seed_from_u64(splitmix(self.seed ^ splitmix(op) ^ 0x696e_7365));
        let count = self.profile.partitions.sample(&mut rng).max(1) as u64;
        let mut written = 0u64;
        for k in 0..count {
            let target = if k == 0 {
                p
            } else {
                splitmix(p ^ splitmix(k)) % partitions.max(1)
            };
            let part = self.partition(target);
            let total = part.row_count();
            let share = self.profile.select.sample(&mut rng);
            let mut chosen: Vec<u64> = (0..total).filter(|_| rng.gen::<f64>() < share).collect();
            if chosen.is_empty() {
                // At least one row per visited partition.
                chosen.push(rng.gen_range(0..total));
            }
            let mut session = Session::default();
            let result = if let [r] = chosen.as_slice() {
                let params = QueryParams {
                    values: Self::bound(&self.row(&part, *r)),
                    ..QueryParams::default()
                };
                self.executor
                    .execute(&mut session, &self.insert, &params)
                    .map(|_| ())
            } else {
                let items: Vec<BatchItem> = chosen
                    .iter()
                    .map(|&r| BatchItem::Prepared {
                        prepared: self.insert.clone(),
                        values: Self::bound(&self.row(&part, r)),
                    })
                    .collect();
                self.executor
                    .batch(
                        &mut session,
                        self.profile.batch,
                        &items,
                        &QueryParams::default(),
                    )
                    .map(|_| ())
            };
            result.map_err(query_err)?;
            written += chosen.len() as u64;
        }
        Ok(UserOutcome {
            rows: written,
            empty: false,
        })
    }

    /// Query `q` (an index into the profile's queries) on partition `p`,
    /// its markers bound from the partition's rows.
    pub fn query(&self, q: usize, p: u64, op: u64) -> Result<UserOutcome> {
        let (prepared, columns, fields) = &self.queries[q];
        let part = self.partition(p);
        let total = part.row_count();
        let mut rng = ChaCha8Rng::seed_from_u64(splitmix(self.seed ^ splitmix(op) ^ 0x7175_6572));
        let same = self.row(&part, rng.gen_range(0..total));
        let values: Vec<Value> = columns
            .iter()
            .map(|&c| match fields {
                Fields::SameRow => same[c].clone(),
                Fields::MultiRow => self.row(&part, rng.gen_range(0..total))[c].clone(),
            })
            .collect();
        let params = QueryParams {
            values: Self::bound(&values),
            ..QueryParams::default()
        };
        let mut session = Session::default();
        let response = self
            .executor
            .execute(&mut session, prepared, &params)
            .map_err(query_err)?;
        let n = match response.result {
            QueryResult::Rows(r) => r.rows.len() as u64,
            _ => 0,
        };
        Ok(UserOutcome {
            rows: n,
            empty: n == 0,
        })
    }
}

/// A partition's seed, key and clustering values per clustering column.
struct Partition {
    base: u64,
    pk: Vec<Value>,
    clustering: Vec<Vec<Value>>,
}

impl Partition {
    /// The product of the clustering columns' counts (1 without any).
    fn row_count(&self) -> u64 {
        self.clustering.iter().map(|v| v.len() as u64).product()
    }
}

/// Column `g`'s value drawn from its population, seeded by the partition's
/// seed and `salt` (which key, clustering position or row and column).
fn draw(base: u64, salt: u64, g: &Generator) -> Value {
    let mut rng = ChaCha8Rng::seed_from_u64(splitmix(base ^ splitmix(salt)));
    g.value(g.population.sample(&mut rng))
}

/// The generators of every column, in the schema's order, from the profile's
/// columnspec and the defaults (invariant 4); a columnspec entry naming no
/// column is refused.
fn generators(schema: &TableSchema, profile: &Profile) -> Result<Vec<Generator>> {
    for name in profile.columns.keys() {
        if schema.column(name).is_err() {
            return Err(bad(format!(
                "columnspec names '{name}', which is not a column of {}.{}",
                profile.keyspace, profile.table
            )));
        }
    }
    let mut out = Vec::new();
    for c in &schema.columns {
        if !Generator::has_generator(&c.ty) {
            return Err(bad(format!(
                "column {} is {}: stress profiles generate values of the native types \
                 other than counter, duration and time",
                c.name,
                c.ty.name()
            )));
        }
        let spec = profile.columns.get(&c.name).cloned().unwrap_or_default();
        if spec.cluster.is_some() && c.kind != ColumnKind::Clustering {
            return Err(bad(format!(
                "columnspec {}: cluster applies to clustering columns only",
                c.name
            )));
        }
        out.push(Generator {
            name: c.name.clone(),
            ty: c.ty.clone(),
            size: spec.size.unwrap_or(Dist::uniform(4, 8)),
            population: spec.population.unwrap_or(Dist::uniform(1, 100_000_000_000)),
            cluster: spec.cluster.unwrap_or(Dist::fixed(1)),
        });
    }
    let rows_at_most: u64 = out
        .iter()
        .filter(|g| {
            profile
                .columns
                .get(&g.name)
                .and_then(|s| s.cluster.as_ref())
                .is_some()
        })
        .map(|g| g.cluster.max.max(1) as u64)
        .try_fold(1u64, |acc, n| acc.checked_mul(n))
        .unwrap_or(u64::MAX);
    if rows_at_most > MAX_ROWS_PER_PARTITION {
        return Err(bad(format!(
            "the clustering columns' cluster counts allow up to {rows_at_most} rows per \
             partition; at most {MAX_ROWS_PER_PARTITION}"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_parse_as_cassandra_stress_writes_them() {
        assert_eq!(Dist::parse("fixed(10)").unwrap(), Dist::fixed(10));
        let u = Dist::parse("uniform(1..10M)").unwrap();
        assert_eq!((u.min, u.max), (1, 10_000_000));
        let g = Dist::parse("~gaussian(5..100, 2)").unwrap();
        assert!(g.inverted && g.kind == DistKind::Gaussian(2.0));
        assert_eq!(Dist::parse("exp(1..100B)").unwrap().max, 100_000_000_000);
        for bad in [
            "uniform(10..1)",
            "extreme(1..10,2)",
            "zipf(1..10)",
            "uniform(1..x)",
            "fixed(1",
            "uniform(1..10,3)",
        ] {
            assert!(Dist::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn draws_stay_within_their_range() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for text in [
            "uniform(3..9)",
            "gaussian(3..9)",
            "exp(3..9)",
            "~exp(3..9)",
            "fixed(5)",
        ] {
            let d = Dist::parse(text).unwrap();
            for _ in 0..2000 {
                let v = d.sample(&mut rng);
                assert!((d.min..=d.max).contains(&v), "{text}: {v}");
            }
        }
        // exp leans to its minimum, its inverse to its maximum.
        let mean = |t: &str, rng: &mut ChaCha8Rng| {
            let d = Dist::parse(t).unwrap();
            (0..4000).map(|_| d.sample(rng) as f64).sum::<f64>() / 4000.0
        };
        assert!(mean("exp(0..1000)", &mut rng) < 250.0);
        assert!(mean("~exp(0..1000)", &mut rng) > 750.0);
    }

    #[test]
    fn a_ratio_is_a_share() {
        let r = Ratio::parse("uniform(1..10)/10").unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..100 {
            let s = r.sample(&mut rng);
            assert!((0.1..=1.0).contains(&s));
        }
        assert!(Ratio::parse("fixed(2)/1").is_err());
        assert!(Ratio::parse("fixed(1)").is_err());
    }

    #[test]
    fn unknown_keys_are_refused_not_ignored() {
        let base = "keyspace: k\ntable: t\n";
        let e = Profile::parse(&format!("{base}token_range_queries: {{}}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'token_range_queries' is not a key"), "{e}");
        let e = Profile::parse(&format!("{base}insert:\n  visits: fixed(1)\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'visits'"), "{e}");
        let e = Profile::parse(&format!(
            "{base}queries:\n  q:\n    cql: x\n    fields: somerows\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("samerow or multirow"), "{e}");
        assert!(Profile::parse("table: t\n").is_err(), "no keyspace");
        assert!(Profile::parse(": : :").is_err());
    }

    #[test]
    fn varints_are_minimal() {
        assert_eq!(minimal_be(0), vec![0]);
        assert_eq!(minimal_be(127), vec![0x7f]);
        assert_eq!(minimal_be(128), vec![0x00, 0x80]);
        assert_eq!(minimal_be(-1), vec![0xff]);
        assert_eq!(minimal_be(-129), vec![0xff, 0x7f]);
    }
}
