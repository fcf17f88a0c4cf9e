#!/usr/bin/env python3
"""No module of a crate reaches itself back through others: for each crate,
the `crate::name` paths in its code (comments and unit tests left out, a
`crate::{a, b::c}` group read as each of its names) say which top-level
modules a top-level module uses; any strongly connected component of two
or more modules (a circle of any size) fails, printed as one circle.

`cycles.py --self-test` builds a tree with a three-module circle, a pair
and a clean crate in a temporary directory and checks that the first two
fail and the third passes."""
import glob
import os
import re
import sys
import tempfile

CRATES = {'core': 'core/src', 'store': 'store/src', 'tools': 'tools/src',
          'provider': 'provider/src', 'io': 'io/src', 'mcp': 'mcp/src',
          'testkit': 'testkit/src', 'view': 'view/src', 'repl': 'repl'}


def strip_comments(src):
    """Code without the unit tests, `//` comments and string literals."""
    src = src.split('#[cfg(test)]')[0]
    src = re.sub(r'"(\\.|[^"\\])*"', '""', src)
    return '\n'.join(l.split('//')[0] for l in src.split('\n'))


def uses(code):
    """The top-level module names that `crate::` paths in `code` name."""
    found = set(re.findall(r'\bcrate::([a-z_][a-z_0-9]*)', code))
    for group in re.findall(r'\bcrate::\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}', code):
        depth = 0
        item = ''
        for ch in group + ',':
            if ch == '{':
                depth += 1
            elif ch == '}':
                depth -= 1
            if ch == ',' and depth == 0:
                name = re.match(r'\s*([a-z_][a-z_0-9]*)', item)
                if name:
                    found.add(name.group(1))
                item = ''
            else:
                item += ch
    return found


def graph(root):
    """Top-level module -> the top-level modules it uses."""
    mods = {}
    for p in glob.glob(root + '/**/*.rs', recursive=True):
        parts = os.path.relpath(p, root)[:-3].split('/')
        if parts[-1] in ('lib', 'main', 'mod'):
            parts = parts[:-1]
        if 'tests' in parts or parts[-1:] == ['tests']:
            continue
        top = parts[0] if parts else ''
        deps = uses(strip_comments(open(p).read()))
        mods.setdefault(top, set()).update(d for d in deps if d != top)
    return {a: {b for b in ds if b in mods} for a, ds in mods.items()}


def components(g):
    """Tarjan's strongly connected components of two or more nodes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def circle(g, comp):
    """One circle through the component's first module, as a path."""
    start = comp[0]
    members = set(comp)
    seen, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(g[v] & members):
            if w == start:
                path = [v]
                while seen[path[-1]] is not None:
                    path.append(seen[path[-1]])
                return list(reversed(path)) + [start]
            if w not in seen:
                seen[w] = v
                queue.append(w)
    return comp


def check(crates):
    bad = 0
    for c, root in crates.items():
        if not os.path.isdir(root):
            continue
        g = graph(root)
        for comp in components(g):
            print(f'{c}: modules import each other in a circle: '
                  + ' -> '.join(circle(g, comp)))
            bad += 1
    return bad


def self_test():
    files = {
        'three/a.rs': 'use crate::b::B;\n',
        'three/b.rs': 'use crate::{c::{self, C}, text};\n',
        'three/c.rs': 'pub fn f() { crate::a::g() }\n',
        'three/text.rs': '// crate::a in a comment\nfn f() {}\n',
        'pair/x.rs': 'use crate::y;\n',
        'pair/y.rs': 'use crate::x;\n',
        'clean/a.rs': 'use crate::b;\n#[cfg(test)]\nmod tests { use crate::a; }\n',
        'clean/b.rs': 'const S: &str = "crate::a";\n',
        'clean/lib.rs': 'pub mod a;\npub mod b;\n',
    }
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(d, name), 'w') as f:
                f.write(text)
        got = {c: check({c: os.path.join(d, c)}) for c in ('three', 'pair', 'clean')}
    want = {'three': 1, 'pair': 1, 'clean': 0}
    if got != want:
        print(f'cycles.py self-test: found {got}, expected {want}')
        return 1
    print('cycles.py self-test: a 3-module circle and a pair caught, a clean crate passes')
    return 0


if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        sys.exit(self_test())
    sys.exit(1 if check(CRATES) else 0)
