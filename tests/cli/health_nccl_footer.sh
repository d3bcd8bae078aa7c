#!/bin/sh
# Completion is judged from the footer, never from the layout (issue 25,
# item 4): each real nccl-tests paste of an older or tagged layout (2.x
# 'error' column, broadcast with 'root' and no 'redop', bfloat16 all_gather
# with 'redop none', Open MPI '[1,0]<stdout>:' tags with padded headers) is
# cut in the corpus, so it raises nccl-aborted; the same file with its cut
# last line replaced by the footer nccl-tests prints (src/common.cu: '# Out
# of bounds values : N OK', '# Avg bus bandwidth    : X', with the file's
# own line tag) must raise none, and keep its rows.
set -u
sn=${1:?usage: health_nccl_footer.sh SN_BINARY}
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=tests/data/real/nccl-tests
n=0
# (nt104-sendrecv-float-error-cut is left out: its one row is the cut
# line, and a footer after no row is rightly 'had no data'.)
for f in nt82-broadcast-root-error-cut nccl1435-bf16-allgather-none-cut \
    awsk8s503-openmpi-tag-padded-header-cut; do
    src=$d/sn00-t00.$f.log
    out=$tmp/sn00-t00.$f.log
    "$sn" health analyze --cluster examples/good-64.yaml "$src" >"$tmp/cut" 2>&1
    grep -q '^warning   nccl-aborted ' "$tmp/cut" || { echo "FAIL: $f: the cut paste gave no nccl-aborted"; exit 1; }
    tag=$(sed -n '$s/^\(\[[0-9,]*\]<stdout>:\).*/\1/p' "$src")
    # Every line but a cut last one (no end of line), then the footer;
    # nt82's last line is its one whole row, kept.
    case $f in
    nt82-*) cat "$src" >"$out" && echo >>"$out" ;;
    *) sed '$d' "$src" >"$out" ;;
    esac
    printf '%s# Out of bounds values : 0 OK\n%s# Avg bus bandwidth    : 1.2345 \n' "$tag" "$tag" >>"$out"
    "$sn" health analyze --cluster examples/good-64.yaml "$out" >"$tmp/full" 2>&1
    if grep -q 'nccl-aborted' "$tmp/full"; then
        echo "FAIL: $f with its footer still gives nccl-aborted"
        cat "$tmp/full"
        exit 1
    fi
    rows_cut=$(sed -n 's/^input [^:]*: nccl-tests, [0-9]* lines, \([0-9]*\) records.*/\1/p' "$tmp/cut")
    rows_full=$(sed -n 's/^input [^:]*: nccl-tests, [0-9]* lines, \([0-9]*\) records.*/\1/p' "$tmp/full")
    [ -n "$rows_full" ] && [ "$rows_full" -ge $((rows_cut - 1)) ] ||
        { echo "FAIL: $f: $rows_full records with the footer, $rows_cut cut"; exit 1; }
    n=$((n + 1))
done
echo "health_nccl_footer: $n layouts, nccl-aborted only without the footer"
