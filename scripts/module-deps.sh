#!/usr/bin/env bash
# Lists the engine crate's module dependencies (which top-level module of crates/strata/src names
# which other one through `crate::<module>`) and flags every edge that points up the intended
# layering, lowest tier first:
#   0 util, error   1 fs, filenames, key, merge, compaction_filter, metrics
#   2 options, snapshot, batch, wal_header
#   3 wal, memtable, sst, blob, version, compaction, cache, iter, range_del   4 db, presets
#   5 verify, txn, ttl, internal, lib (tools, transactions, TTL and the public surface over db)
# A module may name modules of its own tier or below. Comment lines (doc links) are not counted;
# `crate::Db` and the other crate-root re-exports count as uses of the module that defines them.
# Uses from a module's tests (a `tests.rs`/`testfs.rs` file, or the `#[cfg(test)] mod` at the end
# of a file) are marked `(test)`. Prints `module -> dependency [tier a -> b]`, `UP` for upward
# edges, and exits 1 if there is any upward edge outside tests (so CI can keep the picture true).
#   usage: scripts/module-deps.sh [--up]   (--up: print the upward edges only)
set -euo pipefail
cd "$(dirname "$0")/../crates/strata/src"

declare -A tier=(
    [util]=0 [error]=0
    [fs]=1 [filenames]=1 [key]=1 [merge]=1 [compaction_filter]=1 [metrics]=1
    [options]=2 [snapshot]=2 [batch]=2 [wal_header]=2
    [wal]=3 [memtable]=3 [sst]=3 [blob]=3 [version]=3 [compaction]=3 [cache]=3 [iter]=3 [range_del]=3
    [db]=4 [presets]=4
    [verify]=5 [txn]=5 [ttl]=5 [internal]=5 [lib]=5
)

# Prints "dependency<TAB>test|code" for every `crate::x` in the given files outside comments.
uses() {
    awk '
        BEGIN {
            # The crate root re-exports these names (lib.rs); `crate::Db` is a use of db.
            split("Db DbIterator DroppedTail RecoveryReport RepairReport Stats", a); for (i in a) root[a[i]] = "db"
            split("Error Result", a); for (i in a) root[a[i]] = "error"
            split("Compression Options ReadOptions WalRecoveryMode WriteOptions", a); for (i in a) root[a[i]] = "options"
            root["WriteBatch"] = "batch"; root["MergeOperator"] = "merge"
            root["CompactionFilter"] = "compaction_filter"; root["Decision"] = "compaction_filter"
            root["Preset"] = "presets"; root["Snapshot"] = "snapshot"
        }
        function emit(name) {
            if (name ~ /^[A-Z]/) name = root[name]
            if (name != "") print name "\t" (test ? "test" : "code")
        }
        FNR == 1 { test = (FILENAME ~ /(^|\/)(tests|testfs)\.rs$/) }
        /^#\[cfg\(test\)\]/ { pending = 1; next }
        pending && /^(pub(\(crate\))? )?mod / { test = 1 }
        { pending = 0 }
        /^[[:space:]]*\/\// { next }
        {
            line = $0
            while (match(line, /crate::(\{[^}]*\}|[A-Za-z_]+)/)) {
                item = substr(line, RSTART + 7, RLENGTH - 7)
                line = substr(line, RSTART + RLENGTH)
                if (item !~ /^\{/) { emit(item); continue }
                n = split(substr(item, 2, length(item) - 2), parts, /[ ,]+/)
                for (i = 1; i <= n; i++) { sub(/::.*/, "", parts[i]); if (parts[i] != "") emit(parts[i]) }
            }
        }
    ' "$@"
}

only_up=${1:-}
status=0
for entry in *; do
    module=${entry%.rs}
    if [[ -z ${tier[$module]+set} ]]; then
        echo "module-deps: $module has no tier; add it to scripts/module-deps.sh" >&2
        exit 2
    fi
    files=("$entry")
    [[ -d $entry ]] && mapfile -t files < <(find "$entry" -name '*.rs' | sort)
    while IFS=$'\t' read -r dep kinds; do
        [[ $dep == "$module" || -z ${tier[$dep]+set} ]] && continue
        mark=""
        [[ $kinds == test ]] && mark=" (test)"
        if ((tier[$dep] > tier[$module])); then
            echo "UP  $module -> $dep [${tier[$module]} -> ${tier[$dep]}]$mark"
            [[ $kinds == test ]] || status=1
        elif [[ $only_up != --up ]]; then
            echo "    $module -> $dep [${tier[$module]} -> ${tier[$dep]}]$mark"
        fi
    done < <(uses "${files[@]}" | sort -u | awk -F'\t' '
        { if (!($1 in k)) k[$1] = $2; else if (k[$1] != $2) k[$1] = "code" }
        END { for (d in k) print d "\t" k[d] }' | sort)
done
exit $status
