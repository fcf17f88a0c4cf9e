#!/usr/bin/env python3
"""No two modules of a crate import each other: for each crate, the
`crate::name` paths in its code (comments and unit tests left out) name
the modules a top-level module uses; a pair that use each other fails."""
import re,os,glob,sys
crates={'core':'core/src','store':'store/src','tools':'tools/src','provider':'provider/src','io':'io/src','mcp':'mcp/src','testkit':'testkit/src','repl':'repl'}
bad=0
for c,root in crates.items():
    mods={}
    for p in glob.glob(root+'/**/*.rs', recursive=True):
        rel=os.path.relpath(p,root)[:-3]
        parts=rel.split('/')
        if parts[-1] in ('lib','main','mod'): parts=parts[:-1]
        if 'tests' in parts: continue
        top=parts[0] if parts else ''
        s=open(p).read().split('#[cfg(test)]')[0]
        code='\n'.join(l for l in s.split('\n') if not l.strip().startswith('//'))
        deps=set(re.findall(r'crate::([a-z_]+)', code))
        mods.setdefault(top,set()).update(d for d in deps if d!=top)
    for a,ds in mods.items():
        for b in ds:
            if a in mods.get(b,()) and a<b:
                print(c, a, '<->', b); bad+=1
sys.exit(1 if bad else 0)
