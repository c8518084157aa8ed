//! `strata manifest rebuild`, `strata schema rebuild` and `strata quarantine
//! list|purge`: the commands that settle what open refused to guess
//! (docs/DURABILITY.md, "Nothing deleted on doubt"). The work is in
//! `strata::repair`, `strata::schema_rebuild` and `strata::quarantine`; this file
//! parses, calls and prints.

use clap::{Args, Subcommand};
use serde::Serialize;
use std::path::Path;
use strata::{quarantine, repair, Result};

use crate::datadir::DataDirArgs;
use crate::format::OutputArgs;
use crate::{open_db, open_db_read_only, select_tables};

#[derive(Subcommand, Debug)]
pub enum ManifestCommand {
    /// Rebuilds a table's missing MANIFEST from its sstables' own metadata
    /// (files that do not open or belong elsewhere go to the quarantine).
    Rebuild {
        /// `keyspace.table`.
        target: String,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
}

#[derive(Subcommand, Debug)]
pub enum SchemaCommand {
    /// Re-creates a missing schema.json from the tables' sstable headers (and
    /// their newest snapshot's schema.cql for the options).
    Rebuild {
        /// Print what would be written; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Write the tables that could be rebuilt even if some could not.
        #[arg(long)]
        allow_partial: bool,
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
}

pub fn schema(data_dir: &Path, cmd: SchemaCommand) -> Result<()> {
    let SchemaCommand::Rebuild {
        dry_run,
        allow_partial,
        out,
        ..
    } = cmd;
    let opts = strata::schema_rebuild::RebuildSchemaOptions {
        dry_run,
        allow_partial,
    };
    let report = strata::schema_rebuild::rebuild_schema(&strata::fs::Fs::new(), data_dir, &opts)?;
    if out.print_report(&report)? {
        return Ok(());
    }
    for t in &report.tables {
        println!(
            "{} (table id {}): columns from {}, options {}",
            t.table,
            t.table_id,
            t.columns_from.display(),
            match &t.options_from {
                Some(p) => format!("from {}", p.display()),
                None => "defaults (no snapshot with these columns)".to_string(),
            }
        );
        for f in &t.without_identity {
            println!("  no identity header: {f}");
        }
        println!("{}", t.cql);
    }
    for u in &report.unresolved {
        println!("unresolved: {u}");
    }
    println!(
        "next table id {}; schema.json {}",
        report.next_table_id,
        if report.written {
            "written"
        } else {
            "not written"
        }
    );
    Ok(())
}

#[derive(Subcommand, Debug)]
pub enum QuarantineCommand {
    /// Lists quarantined files with their sizes.
    List(QuarantineArgs),
    /// Deletes every quarantined file of the tables named.
    Purge(QuarantineArgs),
}

#[derive(Args, Debug)]
pub struct QuarantineArgs {
    /// `keyspace` or `keyspace.table`; all tables when absent.
    pub target: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub db: DataDirArgs,
}

// Every manifest, schema and quarantine subcommand opens the data directory.
impl ManifestCommand {
    pub fn data_dir_args(&self) -> &DataDirArgs {
        match self {
            ManifestCommand::Rebuild { db, .. } => db,
        }
    }
}

impl SchemaCommand {
    pub fn data_dir_args(&self) -> &DataDirArgs {
        match self {
            SchemaCommand::Rebuild { db, .. } => db,
        }
    }
}

impl QuarantineCommand {
    pub fn data_dir_args(&self) -> &DataDirArgs {
        match self {
            QuarantineCommand::List(a) | QuarantineCommand::Purge(a) => &a.db,
        }
    }
}

pub fn manifest(data_dir: &Path, cmd: ManifestCommand) -> Result<()> {
    match cmd {
        ManifestCommand::Rebuild { target, out, .. } => {
            let (ks, t) = crate::split_table_name(&target)?;
            let report = repair::rebuild_manifest(data_dir, &crate::admin::db_options(), ks, t)?;
            if out.print_report(&report)? {
                return Ok(());
            }
            println!(
                "{}: manifest rebuilt with {} sstable(s)",
                report.table,
                report.listed.len()
            );
            for (id, level) in &report.listed {
                println!("  sstable {id} at level {level}");
            }
            for id in &report.moved_to_level_0 {
                println!("  sstable {id} overlapped its recorded level: listed at level 0");
            }
            for (path, why) in &report.quarantined {
                println!("  quarantined {}: {why}", path.display());
            }
            println!("  the next open replays the whole commit log into this table");
            Ok(())
        }
    }
}

#[derive(Serialize)]
struct Listed {
    table: String,
    files: Vec<quarantine::QuarantinedFile>,
    /// Entries of the quarantine that are not regular files (links,
    /// directories): never purged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    kept: Vec<std::path::PathBuf>,
}

/// The quarantine of `dir`, purged or listed.
fn quarantine_of(
    fs: &strata::fs::Fs,
    dir: &Path,
    purge: bool,
) -> Result<(Vec<quarantine::QuarantinedFile>, Vec<std::path::PathBuf>)> {
    if purge {
        let p = quarantine::purge(fs, dir)?;
        Ok((p.deleted, p.kept))
    } else {
        Ok((quarantine::list(fs, dir)?, Vec::new()))
    }
}

pub fn quarantine(data_dir: &Path, cmd: QuarantineCommand) -> Result<()> {
    let (args, purge) = match cmd {
        QuarantineCommand::List(a) => (a, false),
        QuarantineCommand::Purge(a) => (a, true),
    };
    let db = if purge {
        open_db(data_dir)?
    } else {
        open_db_read_only(data_dir)?
    };
    let mut out = Vec::new();
    for t in select_tables(&db, args.target.as_deref())? {
        let (files, kept) = quarantine_of(t.fs(), t.dir(), purge)?;
        out.push(Listed {
            table: t.schema().qualified_name(),
            files,
            kept,
        });
    }
    // Damaged commit-log segments that --ignore-replay-errors skipped are kept
    // the same way, under the commit-log directory.
    let log_dir = data_dir.join("commitlog");
    if args.target.is_none() && log_dir.is_dir() {
        let (files, kept) = quarantine_of(db.fs(), &log_dir, purge)?;
        out.push(Listed {
            table: "commitlog".to_string(),
            files,
            kept,
        });
    }
    db.close()?;
    if args.output.print_report(&out)? {
        return Ok(());
    }
    let verb = if purge { "deleted" } else { "quarantined" };
    for l in &out {
        let bytes: u64 = l.files.iter().map(|f| f.size_bytes).sum();
        println!(
            "{}: {} file(s) {verb}, {bytes} bytes",
            l.table,
            l.files.len()
        );
        for f in &l.files {
            println!("  {} ({} bytes)", display(&f.path), f.size_bytes);
        }
        for k in &l.kept {
            eprintln!(
                "warning: {}: not a regular file (a link or a directory), left in place",
                display(k)
            );
        }
    }
    Ok(())
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
