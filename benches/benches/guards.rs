//! The guards `apply_edit` runs, beside the full rescan they replaced, in
//! the same run.
//!
//! Files: a Python and a TypeScript module of 300 and 5,000 lines, built
//! deterministically (an import header with multi-line statements, then
//! classes/functions that use the imports, with docstrings and comments).
//! The edit: an exact-tier, unique 2-line `old` in the middle of the file,
//! touching no import, placeholder or conflict-marker line — the common
//! case. For each file:
//!
//! - `guards_off`: `apply_edit_with(.., guards: false)` — the edit alone;
//! - `guards_on`: `apply_edit_with(.., guards: true)` — the edit and the
//!   incremental guards (what `apply` runs now);
//! - `full_rescan_baseline`: the edit without guards, then `check_guards`
//!   on the whole original and result — what `apply` ran before.
//!
//! Two more groups on the 300-line Python file: without a path (the syntax
//! is then unknown, so every language's rule is asked), and an edit that
//! adds an import (it touches an import line, so the full analysis runs).

use coderig::{apply_edit_with, check_guards, ApplyOptions, Edit};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

const PY_HEADER: &str = r#""""Order processing: loading, grouping and reporting batches."""

from __future__ import annotations

import json
import logging
import os
import re
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Optional,
)

from .models import Customer, Order
from .util import chunked, retry

log = logging.getLogger(__name__)
PATTERN = re.compile(r"[a-z]+")
"#;

fn py_block(i: usize) -> String {
    format!(
        r#"

@dataclass
class Record{i}:
    """A record of kind {i}."""

    name: str
    values: List[int] = field(default_factory=list)

    def total(self) -> int:
        # sum the values, skipping negatives
        return sum(v for v in self.values if v >= 0)


@retry(times=3)
def load_{i}(path: str, customers: Iterable[Customer] = ()) -> Optional[Dict[str, Any]]:
    """Load batch {i} from `path`; None when it is missing."""
    if not os.path.exists(path):
        log.warning("missing %s", path)
        return None
    with open(path) as fh:
        data = json.load(fh)
    groups = defaultdict(list)
    for chunk in chunked(data.get("items", []), 100):
        for item in chunk:
            groups[item["kind"]].append(Order(item))
    return {{"count": len(groups), "batch": {i}, "order": OrderedDict(groups)}}
"#
    )
}

const TS_HEADER: &str = r#"import { Injectable } from '@angular/core';
import {
  Observable,
  map,
  of,
} from 'rxjs';
import * as path from 'path';
import type { Config } from './config';
import defaultLogger, { Logger } from './logger';
const fs = require('fs');

@Injectable()
export class Loader {
  constructor(private readonly config: Config) {}
}
"#;

fn ts_block(i: usize) -> String {
    format!(
        r#"
export interface Item{i} {{
  id: number;
  name: string;
  tags?: string[];
}}

/** Loads batch {i} from `dir`; an empty list when it is missing. */
export function load{i}(dir: string, logger: Logger = defaultLogger): Observable<Item{i}[]> {{
  const file = path.join(dir, `batch-{i}.json`);
  if (!fs.existsSync(file)) {{
    logger.warn(`missing ${{file}}`);
    return of([]);
  }}
  const raw = JSON.parse(fs.readFileSync(file, 'utf8')) as Item{i}[];
  // keep only named items
  return of(raw).pipe(map((xs) => xs.filter((x) => x.name.length > 0)));
}}
"#
    )
}

/// `header` then blocks until the file has `lines` lines (cut there).
fn module(header: &str, block: fn(usize) -> String, lines: usize) -> String {
    let mut s = header.to_string();
    let mut i = 0;
    while s.lines().count() < lines {
        s.push_str(&block(i));
        i += 1;
    }
    let mut out: String = s.lines().take(lines).collect::<Vec<_>>().join("\n");
    out.push('\n');
    out
}

/// The edit of the middle block `k`: two lines of its body, one changed.
fn py_edit(k: usize) -> Edit {
    Edit {
        old: format!(
            "            groups[item[\"kind\"]].append(Order(item))\n    return {{\"count\": len(groups), \"batch\": {k}, \"order\": OrderedDict(groups)}}"
        ),
        new: format!(
            "            groups[item[\"kind\"]].append(Order(item))\n    log.info(\"batch %d: %d groups\", {k}, len(groups))\n    return {{\"count\": len(groups), \"batch\": {k}, \"order\": OrderedDict(groups)}}"
        ),
        replace_all: false,
    }
}

fn ts_edit(k: usize) -> Edit {
    Edit {
        old: format!("  const file = path.join(dir, `batch-{k}.json`);\n  if (!fs.existsSync(file)) {{"),
        new: format!("  const file = path.join(dir, `batch-{k}.json`);\n  logger.debug(`loading ${{file}}`);\n  if (!fs.existsSync(file)) {{"),
        replace_all: false,
    }
}

/// The three measurements for one file and edit, after checking that the
/// edit applies, passes the guards, and the baseline finds nothing either.
fn bench_file(c: &mut Criterion, name: &str, content: &str, edit: &Edit, path: Option<&str>) {
    let opts = |guards| ApplyOptions {
        path: path.map(str::to_string),
        guards,
    };
    let (off, on) = (opts(false), opts(true));
    let plain = apply_edit_with(content, edit, &off).expect("the edit applies");
    let guarded = apply_edit_with(content, edit, &on).expect("the edit passes the guards");
    assert_eq!(plain.content, guarded.content);
    assert_eq!(plain.tier, coderig::Tier::Exact);
    assert!(check_guards(content, &plain.content, path).is_empty());

    let mut g = c.benchmark_group(name);
    g.bench_function("guards_off", |b| {
        b.iter(|| apply_edit_with(black_box(content), black_box(edit), &off))
    });
    g.bench_function("guards_on", |b| {
        b.iter(|| apply_edit_with(black_box(content), black_box(edit), &on))
    });
    g.bench_function("full_rescan_baseline", |b| {
        b.iter(|| {
            let r = apply_edit_with(black_box(content), black_box(edit), &off).unwrap();
            let v = check_guards(content, &r.content, path);
            (r, v)
        })
    });
    g.finish();
}

fn guards(c: &mut Criterion) {
    for lines in [300, 5_000] {
        let py = module(PY_HEADER, py_block, lines);
        let k = py.matches("\nclass Record").count() / 2;
        bench_file(
            c,
            &format!("apply_py_{lines}_lines"),
            &py,
            &py_edit(k),
            Some("orders.py"),
        );

        let ts = module(TS_HEADER, ts_block, lines);
        let k = ts.matches("\nexport interface Item").count() / 2;
        bench_file(
            c,
            &format!("apply_ts_{lines}_lines"),
            &ts,
            &ts_edit(k),
            Some("loader.ts"),
        );
    }
    let py = module(PY_HEADER, py_block, 300);
    let k = py.matches("\nclass Record").count() / 2;
    bench_file(c, "apply_py_300_lines_no_path", &py, &py_edit(k), None);
    let import_edit = Edit {
        old: "import os\nimport re\n".to_string(),
        new: "import os\nimport re\nimport sys\n".to_string(),
        replace_all: false,
    };
    bench_file(
        c,
        "apply_py_300_lines_import_edit",
        &py,
        &import_edit,
        Some("orders.py"),
    );
}

criterion_group!(benches, guards);
criterion_main!(benches);
