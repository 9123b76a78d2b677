#!/usr/bin/env bash
# The presets table of docs/tuning.md: each `Options` preset loads the same database and reads
# it back, ROUNDS rounds (default 3) with the presets alternating, medians per preset.
#   scripts/bench-presets.sh [ROUNDS]
#   env: STRATA  the strata binary (default target/release/strata, built if missing)
#        NUM     keys loaded (default 1000000), VALUE value bytes (default 800)
#        DIR     scratch directory (default a new one under target/)
# Per preset and round, two processes, each under /usr/bin/time for its peak RSS:
#   load: --benchmarks=fillrandom,compact  (snappy, no WAL, random order)
#   read: --benchmarks=readrandom,readrandom --use_existing_db=1  (the second pass is reported)
# Every preset runs with its own block cache size (--cache_size is passed explicitly because
# strata bench's own default would otherwise replace the preset's); nothing else is passed, so
# every other option is the preset's.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
strata=${STRATA:-$here/target/release/strata}
num=${NUM:-1000000}
value=${VALUE:-800}
[ -x "$strata" ] || (cd "$here" && cargo build --release -p strata-kv-cli)
dir=${DIR:-$(mktemp -d "$here/target/presets.XXXX")}
presets=(balanced bulk_load read_heavy low_memory)
declare -A cache=([balanced]=33554432 [bulk_load]=33554432 [read_heavy]=268435456 [low_memory]=4194304)
results=$dir/results.tsv
: >"$results"

ops() { awk -v b="$1" '$1 == b && $4 == "micros/op" { v = $5 } END { print v }' "$2"; }
secs() { awk -v b="$1" '$1 == b && $4 == "micros/op" { v = $7 } END { print v }' "$2"; }

for ((r = 1; r <= rounds; r++)); do
  for ((i = 0; i < ${#presets[@]}; i++)); do
    p=${presets[$(((i + r - 1) % ${#presets[@]}))]}
    db=$dir/db-$p
    rm -rf "$db"
    common=(--preset="$p" --cache_size="${cache[$p]}" --db="$db" --num="$num" --value_size="$value"
      --compression_type=snappy --disable_wal=1 --seed="$r")
    /usr/bin/time -f '%M' -o "$dir/load.rss" "$strata" bench "${common[@]}" \
      --benchmarks=fillrandom,compact >"$dir/load.out" 2>&1
    size=$(du -sb "$db" | cut -f1)
    /usr/bin/time -f '%M' -o "$dir/read.rss" "$strata" bench "${common[@]}" --use_existing_db=1 \
      --benchmarks=readrandom,readrandom >"$dir/read.out" 2>&1
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$p" "$(ops fillrandom "$dir/load.out")" \
      "$(secs compact "$dir/load.out")" "$(tail -1 "$dir/load.rss")" "$size" \
      "$(ops readrandom "$dir/read.out")" "$(tail -1 "$dir/read.rss")" | tee -a "$results"
  done
done
rm -rf "$dir"/db-*

echo
echo "$(date -u +%F), $(git -C "$here" rev-parse --short HEAD), $rounds rounds, $num x $value B; medians:"
echo
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
order = ["balanced", "bulk_load", "read_heavy", "low_memory"]
print("| preset | fillrandom ops/s | compact s | load peak RSS MiB | DB MB after compact | readrandom ops/s (pass 2) | read peak RSS MiB |")
print("|---|---|---|---|---|---|---|")
for p in order:
    rs = [r for r in rows if r[1] == p]
    if not rs:
        continue
    med = lambda i: statistics.median(float(r[i]) for r in rs)
    print(f"| `{p}` | {med(2):,.0f} | {med(3):.1f} | {med(4) / 1024:,.0f} | {med(5) / 1e6:,.0f} | {med(6):,.0f} | {med(7) / 1024:,.0f} |")
print()
print("per round (round, preset, fillrandom ops/s, compact s, load RSS KiB, DB bytes, readrandom ops/s, read RSS KiB):")
for r in rows:
    print("  " + " ".join(r))
EOF
