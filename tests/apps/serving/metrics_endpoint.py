#!/usr/bin/python3
"""`--metrics-port`, `--drain-seconds` and `shardopt status`, end to end on loopback.

- A node's and a driver's endpoints are scraped while a run goes on: their counters move.
- Requests that are not a GET of /metrics, /healthz or /readyz (other paths, other methods, bytes
  that are not HTTP, an oversized header, idle connections) get an error or are dropped, and the
  node goes on serving: its probes answer and a run against it ends as a run against a fresh node.
- SIGTERM with --drain-seconds: /readyz turns 503 at once, `status` says draining, a new driver is
  refused by name, the running driver finishes, and the node exits 0 once it has.
- `status` against 2 plain and 2 TLS loopback nodes, a dead address, and a TLS node without certs.
- A parameter-server task's endpoint reports its step as the job goes.

    metrics_endpoint.py SHARDOPT SOURCE_DIR SCRATCH_DIR     (exit 0: passed)

Every process it starts, it stops (finally).
"""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

SHARDOPT, SOURCE, SCRATCH = sys.argv[1:4]
STARTED = []


def start(args, **kw):
    process = subprocess.Popen([SHARDOPT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, **kw)
    STARTED.append(process)
    return process


def read_until(process, stream, pattern, timeout=60):
    """The first match of `pattern` in the lines of `process`'s `stream` (lines before it are
    dropped). A process that says nothing for `timeout` seconds is killed, which ends the wait."""
    killer = threading.Timer(timeout, process.kill)
    killer.start()
    seen = []
    try:
        for line in iter(stream.readline, ""):
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match
    finally:
        killer.cancel()
    raise AssertionError(f"no {pattern!r} in {''.join(seen)!r}")


def start_node(*extra):
    node = start(["node", "--port", "0", "--metrics-port", "0", *extra])
    address = read_until(node, node.stdout, r"listening on (127\.0\.0\.1:\d+)").group(1)
    metrics = read_until(node, node.stderr, r"metrics on (http://127\.0\.0\.1:\d+)/metrics").group(1)
    return node, address, metrics


def get(url, timeout=10):
    """(status, body) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def scrape(base):
    """The samples of /metrics: {'name{labels}': value}."""
    status, body = get(base + "/metrics")
    assert status == 200, (status, body)
    samples = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def raw(port, data, read=True):
    """Sends `data` on a fresh connection; the status line of the reply ('' if it closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as connection:
        connection.sendall(data)
        if not read:
            return ""
        reply = b""
        try:
            while b"\r\n" not in reply:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                reply += chunk
        except (ConnectionResetError, socket.timeout):
            pass
        return reply.split(b"\r\n", 1)[0].decode(errors="replace")


def train(address, *extra, metrics=False):
    args = ["train", "--nodes", address, "--quiet", "--json", *extra]
    if metrics:
        args += ["--metrics-port", "0"]
    return start(args)


def finish(process, timeout=300):
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def wait_for(condition, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


SHORT_RUN = ["--limit", "3000", "--test-limit", "500", "--solver", "lbfgs", "--max-iter", "15"]


def test_hostile_requests_leave_the_node_serving():
    node, address, base = start_node()
    port = int(base.rsplit(":", 1)[1])
    code, out, err = finish(train(address, *SHORT_RUN))
    assert code == 0, err
    reference = json.loads(out)["objective"]
    for path in ["/", "/metricsx", "/metrics/extra", "/healthz/", "/../../etc/passwd", "/readyz.txt",
                 "/index.html"]:
        assert raw(port, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()).split(" ")[1] == "404", path
    for method in ["POST", "PUT", "DELETE"]:
        line = raw(port, f"{method} /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".encode())
        assert line.split(" ")[1] in ("404", "405"), (method, line)
    garbage = raw(port, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(200) + b"\r\n\r\n")
    assert garbage == "" or garbage.split(" ")[1].startswith("4"), garbage
    big = raw(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n")
    assert big == "" or big.split(" ")[1].startswith("4"), big
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]  # say nothing
    try:
        for connection in idle:
            connection.sendall(b"GET /metr")
        started = time.time()
        assert get(base + "/healthz", timeout=5) == (200, "ok\n")
        assert time.time() - started < 1.0, "idle connections delay the endpoint"
        assert scrape(base)["shardopt_node_drivers"] == 0
    finally:
        for connection in idle:
            connection.close()
    assert get(base + "/readyz") == (200, "ready\n")
    code, out, err = finish(train(address, *SHORT_RUN))
    assert code == 0, err
    assert json.loads(out)["objective"] == reference  # the same bits as before the attacks
    samples = scrape(base)
    assert samples['shardopt_node_evaluations_total{kind="loss_gradient"}'] > 0
    assert samples['shardopt_node_refusals_total{request="hello",reason="refused"}'] == 0
    node.send_signal(signal.SIGTERM)
    assert node.wait(timeout=30) == 0


def test_counters_move_and_a_draining_node_finishes_its_driver():
    node, address, node_base = start_node("--drain-seconds", "120")
    # After its third iteration the run goes on for about 6 s (alone); the checks up to
    # `driver.poll()` below take 0.2 s of that.
    driver = train(address, "--limit", "15000", "--test-limit", "500", "--solver", "lbfgs",
                   "--max-iter", "250", metrics=True)
    driver_base = read_until(driver, driver.stderr, r"metrics on (http://127\.0\.0\.1:\d+)/metrics").group(1)
    first = wait_for(lambda: (lambda s: s if s.get("shardopt_driver_iteration", 0) >= 3 else None)(
        scrape(driver_base)), "the driver's third iteration")
    node_first = scrape(node_base)
    assert get(driver_base + "/readyz")[0] == 200
    assert first["shardopt_driver_ready"] == 1
    assert node_first["shardopt_node_drivers"] == 1 and node_first["shardopt_node_shards"] >= 1
    assert node_first["shardopt_node_held_bytes"] > 15000 * 784 * 4
    later = wait_for(lambda: (lambda s: s if s["shardopt_driver_iteration"] >= first["shardopt_driver_iteration"] + 2
                              else None)(scrape(driver_base)), "two more iterations")
    node_later = scrape(node_base)
    assert later["shardopt_driver_evaluations_total"] > first["shardopt_driver_evaluations_total"]
    assert later["shardopt_driver_passes_total"] == later["shardopt_driver_evaluations_total"]
    assert later["shardopt_driver_objective"] < first["shardopt_driver_objective"]
    assert later["shardopt_wire_sent_bytes_total"] > first["shardopt_wire_sent_bytes_total"]
    served = 'shardopt_node_evaluations_total{kind="loss_gradient"}'
    assert node_later[served] > node_first[served]
    assert node_later["shardopt_node_busy_seconds_total"] > node_first["shardopt_node_busy_seconds_total"]
    assert node_later["shardopt_wire_received_bytes_total"] > node_first["shardopt_wire_received_bytes_total"]
    assert node_later["shardopt_node_last_evaluation_timestamp_seconds"] > time.time() - 60

    node.send_signal(signal.SIGTERM)
    wait_for(lambda: get(node_base + "/readyz")[0] == 503, "readyz to fail")
    assert "draining" in get(node_base + "/readyz")[1]
    assert get(node_base + "/healthz") == (200, "ok\n")
    assert scrape(node_base)["shardopt_node_draining"] == 1
    status = subprocess.run([SHARDOPT, "status", "--nodes", address, "--json"], capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 0 and json.loads(status.stdout)["state"] == "draining", status
    code, out, err = finish(train(address, *SHORT_RUN))
    assert code != 0 and "draining" in err, err
    assert scrape(node_base)['shardopt_node_refusals_total{request="hello",reason="refused"}'] == 1
    assert node.poll() is None, "the node left while its driver was running"
    assert driver.poll() is None, "the run ended before the drain could be seen: make it longer"
    code, out, err = finish(driver)
    assert code == 0, err
    assert json.loads(out)["stop_reason"] == "max_iterations"
    assert node.wait(timeout=30) == 0  # once its driver is gone, not after 120 s
    assert "draining" in node.stderr.read()


def test_status_of_plain_and_tls_nodes():
    plain = [start_node("--threads", str(t)) for t in (3, 5)]
    listed = ",".join(address for _, address, _ in plain)
    status = subprocess.run([SHARDOPT, "status", "--nodes", listed, "--json"], capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    rows = [json.loads(line) for line in status.stdout.splitlines()]
    assert [r["node"] for r in rows] == listed.split(",")
    assert [r["threads"] for r in rows] == [3, 5]
    assert all(r["protocol"] == rows[0]["protocol"] and r["state"] == "serving" and r["shards"] == 0
               and r["limits"]["shards"] == 1024 for r in rows)
    table = subprocess.run([SHARDOPT, "status", "--nodes", listed + ",127.0.0.1:1"],
                           capture_output=True, text=True, timeout=60)
    assert table.returncode == 1
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["NODE", "STATE", "PROTOCOL"] and len(lines) == 4
    assert "serving" in lines[1] and "serving" in lines[2] and "unreachable" in lines[3]

    certs = os.path.join(SCRATCH, "certs")
    subprocess.run(["/bin/bash", os.path.join(SOURCE, "scripts", "make-certs"), certs], check=True,
                   capture_output=True, timeout=120)
    pem = lambda name: os.path.join(certs, name)
    node_tls = ["--tls-cert", pem("node.pem"), "--tls-key", pem("node.key"), "--tls-ca", pem("ca-driver.pem")]
    secure = [start_node(*node_tls) for _ in range(2)]
    listed = ",".join(address for _, address, _ in secure)
    driver_tls = ["--tls-cert", pem("driver.pem"), "--tls-key", pem("driver.key"), "--tls-ca", pem("ca-node.pem")]
    status = subprocess.run([SHARDOPT, "status", "--nodes", listed, "--json", *driver_tls],
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert len(status.stdout.splitlines()) == 2
    refused = subprocess.run([SHARDOPT, "status", "--nodes", secure[0][1], "--timeout", "5"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "unreachable" in refused.stdout, refused
    for node, _, base in plain + secure:
        assert get(base + "/healthz")[0] == 200  # the refused plain connection did not hurt it
        node.send_signal(signal.SIGTERM)
        assert node.wait(timeout=30) == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_parameter_server_reports_its_steps():
    hosts = lambda: f"127.0.0.1:{free_port()}"
    job = ["ps-task", "--ps_hosts", hosts(), "--worker_hosts", hosts(), "--limit", "3000",
           "--test-limit", "500", "--last-step", "6000", "--log-steps", "50", "--batch-size", "32"]
    ps = start(job + ["--job_name", "ps", "--task_index", "0", "--metrics-port", "0"])
    base = read_until(ps, ps.stderr, r"metrics on (http://127\.0\.0\.1:\d+)/metrics").group(1)
    waiting = scrape(base)
    assert waiting["shardopt_ps_running"] == 0 and 'shardopt_info{role="ps"' in "".join(waiting)
    assert get(base + "/readyz")[0] == 200
    worker = start(job + ["--job_name", "worker", "--task_index", "0", "--metrics-port", "0", "--quiet"])
    chief = read_until(worker, worker.stderr, r"metrics on (http://127\.0\.0\.1:\d+)/metrics").group(1)
    steps, chief_steps = [], []
    while worker.poll() is None:
        try:
            samples = scrape(base)
            chief_steps.append(scrape(chief).get("shardopt_driver_global_step", 0))
        except (urllib.error.URLError, ConnectionError, http.client.IncompleteRead, AssertionError):
            break  # the job is over: its tasks are leaving (a reply cut off as its task stops)
        if samples["shardopt_ps_running"] == 1:
            steps.append(samples["shardopt_ps_step"])
        time.sleep(0.02)
    code, out, err = finish(worker)
    assert code == 0, err
    assert ps.wait(timeout=60) == 0
    assert steps and max(steps) > 0 and steps == sorted(steps), steps[-10:]
    assert max(chief_steps) >= 50 and chief_steps == sorted(chief_steps), chief_steps[-10:]


def main():
    os.makedirs(SCRATCH, exist_ok=True)
    failed = 0
    tests = [(name, f) for name, f in globals().items() if name.startswith("test_")]
    for name, test in tests:
        try:
            test()
            print("ok  ", name, flush=True)
        except Exception as error:  # report every test, then fail
            failed += 1
            print("FAIL", name, repr(error), flush=True)
        finally:
            for process in STARTED:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            STARTED.clear()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
