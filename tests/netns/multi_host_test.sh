#!/usr/bin/env bash
# Several hosts on one machine: a driver and two nodes, each in a network namespace of its own,
# joined by veth pairs (driver 10.213.N.1 <-> node N 10.213.N.2, N = 1, 2). Training across them
# must give the objective of a local run to the last bit. Exits 77 (CTest: skipped) with the reason
# where namespaces cannot be created. Everything it creates, it removes.
set -euo pipefail
bin=${1:?usage: multi_host_test.sh PATH/TO/shardopt}
tag=$$
driver_ns=shardopt-d-$tag
work=$(mktemp -d)
pids=()
namespaces=()

cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

if ! ip netns add "$driver_ns" 2>"$work/why"; then
  echo "SKIPPED: cannot create network namespaces here: $(cat "$work/why")"
  exit 77
fi
namespaces+=("$driver_ns")
ip netns exec "$driver_ns" ip link set lo up

endpoints=""
for n in 1 2; do
  ns=shardopt-n$n-$tag
  ip netns add "$ns"
  namespaces+=("$ns")
  ip netns exec "$ns" ip link set lo up
  ip link add "vd$n-$tag" type veth peer name "vn$n-$tag"
  ip link set "vd$n-$tag" netns "$driver_ns"
  ip link set "vn$n-$tag" netns "$ns"
  ip netns exec "$driver_ns" ip addr add "10.213.$n.1/30" dev "vd$n-$tag"
  ip netns exec "$ns" ip addr add "10.213.$n.2/30" dev "vn$n-$tag"
  ip netns exec "$driver_ns" ip link set "vd$n-$tag" up
  ip netns exec "$ns" ip link set "vn$n-$tag" up
  # Plain TCP inside namespaces this test made (TLS across hosts is tested with certificates in
  # cluster_tests); a node refuses a non-loopback address without TLS unless told --insecure.
  ip netns exec "$ns" "$bin" node --bind "10.213.$n.2" --port 4242 --insecure >"$work/node$n.out" 2>"$work/node$n.err" &
  pids+=($!)
  endpoints+="${endpoints:+,}10.213.$n.2:4242"
done
for n in 1 2; do
  for _ in $(seq 100); do
    grep -q "listening on" "$work/node$n.out" && break
    sleep 0.1
  done
  grep -q "listening on" "$work/node$n.out" || { echo "node $n did not start:"; cat "$work/node$n.err"; exit 1; }
done

args=(train --data fashion-mnist --limit 3000 --test-limit 300 --lambda 1e-3 --shards 4
      --max-iter 30 --json --quiet)
ip netns exec "$driver_ns" "$bin" "${args[@]}" --nodes "$endpoints" >"$work/remote.json"
"$bin" "${args[@]}" >"$work/local.json"
remote=$(grep -o '"objective":[^,]*' "$work/remote.json")
local=$(grep -o '"objective":[^,]*' "$work/local.json")
echo "across namespaces: $remote; local: $local"
grep -q '"nodes":2' "$work/remote.json" || { echo "FAILED: the run did not use 2 nodes"; exit 1; }
[[ "$remote" == "$local" ]] || { echo "FAILED: objectives differ"; exit 1; }
echo "1 passed, 0 failed"
