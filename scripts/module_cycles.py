#!/usr/bin/env python3
"""Module dependency graph of the strata library (docs/ARCHITECTURE.md, "Layers").

Edges come from `crate::` paths, `super::` paths and groups, and a parent's uses
of its children (`pub use child::X`); comments and `#[cfg(test)] mod tests {..}`
blocks and `tests`/`proptests` files are left out. Prints every cycle (strongly
connected component of more than one module) and exits 1 if there is one.

    python3 scripts/module_cycles.py [SRC_DIR] [--top] [--order]
    cargo modules dependencies --package strata --lib --no-externs --no-fns \
        --no-traits --no-types --no-sysroot --no-owns \
        | python3 scripts/module_cycles.py - --dot [--top] [--order]

--top folds every module into its top-level module (the layer view); --order
prints the modules dependencies-first. With --dot it reads the module graph that
cargo-modules (0.27) computes instead of scanning the sources; its own `--acyclic`
flag is not usable here, as it also reports a type's methods as a cycle.
"""
import os, re, sys
args = [a for a in sys.argv[1:] if a == '-' or not a.startswith('-')]
root = args[0] if args else 'crates/strata/src'
mods = {}
dot = '--dot' in sys.argv
for dp, _, fs in ([] if dot else os.walk(root)):
    for f in fs:
        if not f.endswith('.rs'): continue
        path = os.path.join(dp, f)
        rel = os.path.relpath(path, root)[:-3]
        if rel.endswith('/mod'): rel = rel[:-4]
        if rel == 'lib': continue
        mods[rel.replace('/', '::')] = path
def strip_tests(src):
    # drop the `#[cfg(test)] mod tests { ... }` block (last in every file here)
    i = src.find('#[cfg(test)]\nmod tests {')
    return src if i < 0 else src[:i]
edges = {m: set() for m in mods}
if dot:
    # `cargo modules dependencies ... --no-owns` output: module-level "uses" edges.
    src = sys.stdin.read() if root == '-' else open(root).read()
    for a, b in re.findall(r'"strata((?:::[a-z_0-9]+)*)" -> "strata((?:::[a-z_0-9]+)*)" \[label="uses"', src):
        a, b = a[2:] or 'lib', b[2:] or 'lib'
        for x in (a, b):
            edges.setdefault(x, set())
            mods.setdefault(x, None)
        if a != b and a != 'lib' and b != 'lib':
            edges[a].add(b)
for m, path in ([] if dot else mods.items()):
    if m.split('::')[-1] in ('tests', 'proptests'): continue
    src = strip_tests(open(path).read())
    src = '\n'.join(l for l in src.splitlines() if not l.strip().startswith('//'))
    parent = '::'.join(m.split('::')[:-1])
    refs = re.findall(r'crate::((?:[a-z_0-9]+::)*[a-z_0-9]+)', src)
    refs += [ (parent + '::' if parent else '') + r for r in re.findall(r'super::((?:[a-z_0-9]+::)*[a-z_0-9]+)', src)]
    if re.search(r'super::\{', src) and parent:
        refs.append(parent)
    # `use crate::{a, b::c}` groups
    for grp in re.findall(r'crate::\{([^}]*)\}', src):
        refs += [x.strip() for x in grp.split(',')]
    # paths relative to this module: its children (`pub use child::X`, `child::f()`)
    for c in mods:
        if c.startswith(m + '::') and c.count('::') == m.count('::') + 1:
            name = c.split('::')[-1]
            if re.search(r'(?<![:\w])' + name + r'::', src):
                refs.append(c)
    for r in refs:
        parts = r.split('::')
        # longest prefix that is a module
        for k in range(len(parts), 0, -1):
            cand = '::'.join(parts[:k])
            if cand in mods:
                if cand != m and (not m.startswith(cand + '::') or '--children' in sys.argv):
                    edges[m].add(cand)
                break
        else:
            # item of a parent module (e.g. crate::Error from lib)
            pass
if '--top' in sys.argv:
    top = lambda m: m.split('::')[0]
    folded = {}
    for m, ds in edges.items():
        folded.setdefault(top(m), set()).update(top(d) for d in ds if top(d) != top(m))
    edges = folded
    mods = {m: None for m in edges}
# Tarjan SCC
idx, low, st, on, out, n = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        out.append(comp)
for v in sorted(mods):
    if v not in idx: sc(v)
cycles = [sorted(c) for c in out if len(c) > 1]
for c in cycles:
    print('CYCLE:', ' <-> '.join(c))
    for a in c:
        print('   ', a, '->', sorted(x for x in edges[a] if x in c))
if '--order' in sys.argv:
    # out is in reverse topological order of SCCs (dependencies first)
    print('ORDER (dependencies first):')
    print('\n'.join('  ' + ' + '.join(sorted(c)) for c in out))
sys.exit(1 if cycles else 0)
