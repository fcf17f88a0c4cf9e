#!/bin/sh
# A new session and a resume after a compaction, timed by hyperfine
# (issue 46, item 3: targets ≤ 4 ms and ≤ 5 ms median).
#
#   benches/start.sh target/release/revolve [OTHER-BUILD ...]
#
# Each binary gets a fresh HOME and XDG roots in a temp dir (removed at
# the end), memory seeded by a first run, and a session named `comp` of
# five turns compacted with /compact (the scripted provider answers). Then
# hyperfine (apt-get install hyperfine) runs, 50 times after 5 warm-ups:
#   new session:   revolve -p hi --provider scripted --script S
#   resume after compaction: revolve -r comp -p /quit --provider scripted --script S
# Quote the figures with `uptime`: on a loaded machine they are noise.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
uptime
for bin; do
    bin=$(realpath "$bin")
    root=$(mktemp -d)
    mkdir -p "$root/work"
    export HOME="$root/home" XDG_STATE_HOME="$root/state" XDG_CONFIG_HOME="$root/config" \
        GIT_CEILING_DIRECTORIES="$root" REVOLVE_NO_AUTO_REFINE=1
    i=0
    while [ $i -lt 200 ]; do
        echo '{"text":"ok, noted: the build uses cargo and the tests run with cargo test"}'
        i=$((i + 1))
    done > "$root/script.jsonl"
    script="$root/script.jsonl"
    (
        cd "$root/work"
        "$bin" -p hi --provider scripted --script "$script" > /dev/null 2>&1
        printf 'one\ntwo\nthree\nfour\nfive\n/compact\n' |
            "$bin" --name comp --provider scripted --script "$script" > /dev/null 2>&1
        [ "$(ls "$XDG_STATE_HOME"/task-agent/projects/*/sessions/*.jsonl | wc -l)" -ge 3 ] ||
            { echo "the compaction did not make a new file" >&2; exit 1; }
        hyperfine -N --warmup 5 --runs 50 --style basic --export-json "$root/times.json" \
            -n "new session ($bin)" "$bin -p hi --provider scripted --script $script" \
            -n "resume after compaction ($bin)" "$bin -r comp -p /quit --provider scripted --script $script"
        python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("%s: median %.2f ms, user %.2f ms, system %.2f ms" % (r["command"], r["median"] * 1e3, r["user"] * 1e3, r["system"] * 1e3))' "$root/times.json"
    )
    rm -rf "$root"
done
