#!/usr/bin/env bash
# Several hosts on one machine, on shaped links: scripts/netns-cluster puts 3 nodes and the driver
# in network namespaces of their own behind a switch whose ports are shaped to 200 Mbit/s (tc tbf).
# Training across them, as a star and as a reduction tree (its nodes given by --nodes, and by a DNS
# name with all their addresses), must give the objective of a local run to the last bit. Exits 77 (CTest: skipped) with the reason where namespaces cannot be created;
# netns-cluster removes everything it made.
set -euo pipefail
bin=${1:?usage: multi_host_test.sh PATH/TO/shardopt}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

args=(train --data fashion-mnist --limit 3000 --test-limit 300 --lambda 1e-3 --shards 6
      --max-iter 30 --json --quiet)
"$bin" "${args[@]}" >"$work/local.json"
status=0
SHARDOPT=$bin "$here/../../scripts/netns-cluster" 3 --rate 200mbit -- bash -c '
  set -e
  "$0" "${@:2}" --nodes "$NODES" --topology star >"$1/star.json"
  "$0" "${@:2}" --nodes "$NODES" --topology tree --fan-in 2 >"$1/tree.json"
  "$0" "${@:2}" --nodes-dns "$NODES_DNS" --topology tree --fan-in 2 >"$1/dns.json"
' "$bin" "$work" "${args[@]}" >"$work/cluster.out" 2>&1 || status=$?
if ((status == 77)); then
  cat "$work/cluster.out"
  exit 77
fi
((status == 0)) || { cat "$work/cluster.out"; echo "FAILED: the runs across namespaces failed"; exit 1; }
local_objective=$(grep -o '"objective":[^,]*' "$work/local.json")
for topology in star tree dns; do
  remote=$(grep -o '"objective":[^,]*' "$work/$topology.json")
  echo "across namespaces, $topology: $remote; local: $local_objective"
  grep -q '"nodes":3' "$work/$topology.json" || { echo "FAILED: the $topology run did not use 3 nodes"; exit 1; }
  [[ "$remote" == "$local_objective" ]] || { echo "FAILED: the $topology objective differs"; exit 1; }
done
echo "3 passed, 0 failed"
