//! Golden decisions recorded from Cassandra's own strategy code
//! (`testdata/cassandra_choices.txt`): an sstable set written as text in, the
//! task the strategy proposes (and its pending-task estimate) out, each case
//! with the lines of Cassandra's code it was read from. A change of behaviour
//! shows as a diff of expected and actual text.
//!
//! Format, one case per block, blocks separated by blank lines; `#` starts a
//! comment line:
//!
//! ```text
//! case <name>
//! options <the body of compaction = {...}>
//! sstable <id> size=<n>[K|M] [min=<t>] [max=<t>] [created=<t>] [droppable=<ratio>] [busy]
//! now <t>                      (the decision's clock; default 0)
//! memtable_min <t>             (oldest write in a memtable; default none)
//! expect <merge ids... | drop ids... | rewrite id | none>
//! pending <n>                  (estimated_pending_tasks; optional)
//! ```
//!
//! Times `<t>` are integers with a unit: `us`, `s`, `m`, `h`, `d` (a bare
//! number is microseconds); `min`/`max` are write timestamps, `created` and
//! `now` are seconds-resolution clock readings. Sizes are bytes, or KiB/MiB
//! with `K`/`M`. Defaults: `min=id ms`, `max=id ms + 999 us`, `created=0`.

use super::test_util::{ctx, opts, sst};
use super::{strategy_for, CompactionTask, SSTableInfo, StrategyContext};

const CASES: &str = include_str!("testdata/cassandra_choices.txt");

fn time_micros(text: &str) -> i64 {
    let (num, unit): (String, String) = text.chars().partition(|c| c.is_ascii_digit() || *c == '-');
    let n: i64 = num.parse().unwrap_or_else(|_| panic!("bad time '{text}'"));
    let scale = match unit.as_str() {
        "" | "us" => 1,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        other => panic!("bad time unit '{other}' in '{text}'"),
    };
    n * scale
}

fn size_bytes(text: &str) -> u64 {
    let (num, unit) = text.split_at(text.trim_end_matches(['K', 'M']).len());
    let n: u64 = num.parse().unwrap_or_else(|_| panic!("bad size '{text}'"));
    match unit {
        "" => n,
        "K" => n << 10,
        "M" => n << 20,
        other => panic!("bad size unit '{other}'"),
    }
}

fn parse_sstable(words: &[&str]) -> SSTableInfo {
    let id: u64 = words[0].parse().expect("sstable id");
    let mut s = sst(id, 0, 0);
    for w in &words[1..] {
        match w.split_once('=') {
            Some(("size", v)) => s.size_bytes = size_bytes(v),
            Some(("min", v)) => s.min_timestamp_micros = time_micros(v),
            Some(("max", v)) => s.max_timestamp_micros = time_micros(v),
            Some(("created", v)) => s.creation_time_seconds = time_micros(v) / 1_000_000,
            Some(("droppable", v)) => {
                s.droppable_tombstone_ratio = v.parse().expect("droppable ratio")
            }
            None if *w == "busy" => s.being_compacted = true,
            _ => panic!("bad sstable attribute '{w}'"),
        }
    }
    s.uncompressed_bytes = s.size_bytes * 2;
    s
}

fn describe(task: Option<CompactionTask>) -> String {
    let ids = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
    match task {
        None => "none".into(),
        Some(CompactionTask::Merge { inputs, .. }) => format!("merge {}", ids(&inputs)),
        Some(CompactionTask::Drop { ids: d }) => format!("drop {}", ids(&d)),
        Some(CompactionTask::Rewrite { id, .. }) => format!("rewrite {id}"),
        Some(other) => format!("{other:?}"),
    }
}

struct Case {
    name: String,
    options: String,
    sstables: Vec<SSTableInfo>,
    ctx: StrategyContext,
    expect: String,
    pending: Option<usize>,
}

fn parse_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for block in CASES.split("\n\n") {
        let lines: Vec<&str> = block
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        if lines.is_empty() {
            continue;
        }
        let mut case = Case {
            name: String::new(),
            options: String::new(),
            sstables: Vec::new(),
            ctx: ctx(0),
            expect: String::new(),
            pending: None,
        };
        for line in lines {
            let (head, rest) = line.split_once(' ').unwrap_or((line, ""));
            match head {
                "case" => case.name = rest.to_string(),
                "options" => case.options = rest.to_string(),
                "sstable" => case
                    .sstables
                    .push(parse_sstable(&rest.split_whitespace().collect::<Vec<_>>())),
                "now" => case.ctx.now_seconds = time_micros(rest) / 1_000_000,
                "memtable_min" => case.ctx.memtable_min_timestamp_micros = Some(time_micros(rest)),
                "expect" => case.expect = rest.to_string(),
                "pending" => case.pending = Some(rest.parse().expect("pending count")),
                other => panic!("bad line '{other}' in case '{}'", case.name),
            }
        }
        assert!(
            !case.name.is_empty() && !case.expect.is_empty(),
            "incomplete case: {block}"
        );
        cases.push(case);
    }
    cases
}

#[test]
fn decisions_match_cassandras_code() {
    let cases = parse_cases();
    assert!(cases.len() >= 10, "the golden file lost its cases");
    let mut failures = Vec::new();
    for c in &cases {
        let strategy = strategy_for(&opts(&c.options));
        // Observed first: an estimate never advances the strategy's state.
        let pending = strategy.estimated_pending_tasks(&c.sstables, &c.ctx);
        let got = describe(strategy.next_task(&c.sstables, &c.ctx));
        if got != c.expect {
            failures.push(format!("{}: expected '{}', got '{got}'", c.name, c.expect));
        }
        if let Some(p) = c.pending {
            if p != pending {
                failures.push(format!("{}: expected {p} pending, got {pending}", c.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
