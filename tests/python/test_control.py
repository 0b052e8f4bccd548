"""The run's control from Python: the callback, stopping, Ctrl-C, the GIL, PS mode."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import shardopt
from conftest import classification


def test_the_callback_sees_every_iteration_and_can_stop_the_run():
    X, y = classification()
    seen = []
    full = shardopt.train(X, y, lam=1e-3, shards=2, max_iter=20,
                          callback=lambda info: seen.append((info.iteration, info.f, info.grad_norm, info.seconds)))
    assert [s[0] for s in seen] == list(range(1, full.iterations + 1))
    np.testing.assert_array_equal([s[1] for s in seen], full.history["objective"])
    assert all(s[3] >= 0 for s in seen)

    stopped = shardopt.train(X, y, lam=1e-3, shards=2, max_iter=20,
                             callback=lambda info: info.iteration < 3)
    assert stopped.stop_reason == "stopped_by_hook"
    assert stopped.iterations == 3
    assert stopped.objective == full.history["objective"][2]  # where the full run was then


def test_a_callback_that_raises_stops_the_run_and_its_exception_comes_through():
    X, y = classification()
    calls = []

    def callback(info):
        calls.append(info.iteration)
        if info.iteration == 2:
            raise LookupError("from the callback")

    with pytest.raises(LookupError, match="from the callback"):
        shardopt.train(X, y, shards=2, max_iter=50, callback=callback)
    assert calls == [1, 2]


def test_the_callback_runs_on_the_calling_thread():
    X, y = classification()
    threads = set()
    shardopt.train(X, y, shards=2, max_iter=5, callback=lambda info: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}


def test_the_gil_is_released_while_shards_compute():
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    seen = []  # (time, ticks so far) at every iteration: the window is the optimisation itself
    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        # L-BFGS: about a second of work in 40 iterations (Newton-CG's products took 8 s to the same end).
        shardopt.train(data="fashion-mnist", limit=20000, test_limit=100, shards=2, max_iter=40, epsilon=0,
                       solver="lbfgs", callback=lambda info: seen.append((time.monotonic(), len(ticks))))
    finally:
        done.set()
        thread.join()
    seconds = seen[-1][0] - seen[0][0]
    during = seen[-1][1] - seen[0][1]
    # The ticker needs the GIL for every tick (about 900 a second when it gets it); a run that
    # held the GIL between callbacks would leave it almost none.
    assert seconds > 0.1
    assert during > 300 * seconds


def test_ctrl_c_stops_a_run_within_a_second_with_the_last_theta():
    script = textwrap.dedent("""
        import time, numpy, shardopt
        def callback(info):
            if info.iteration == 2:
                print("running", flush=True)
        try:
            shardopt.train(data="fashion-mnist", limit=20000, test_limit=100, shards=2,
                           max_iter=100000, epsilon=0, callback=callback)
            print("finished", flush=True)
        except KeyboardInterrupt as e:
            r = e.result
            print("interrupted", time.monotonic(), r.stop_reason, r.iterations, r.theta.size,
                  r.objective == r.history["objective"][-1], len(r.history["objective"]) == r.iterations,
                  numpy.isfinite(r.theta).all(), flush=True)
        """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ))
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout))
    try:
        reader.start()
        deadline = time.monotonic() + 120
        while not lines and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.01)  # polling the child's output: the event is its first line
        assert lines and lines[0].strip() == "running", lines
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        reader.join(timeout=60)
    finally:
        process.kill()
    words = lines[1].split()
    assert words[0] == "interrupted", lines
    stopped_at, reason, iterations, size = float(words[1]), words[2], int(words[3]), int(words[4])
    assert stopped_at - sent < 1.0
    assert reason == "interrupted" and iterations >= 2 and size == 7850
    # theta is the last accepted iterate: the objective is that of the history's last row.
    assert words[5:] == ["True", "True", "True"]


def test_parameter_server_mode_from_python():
    X, y = classification(rows=400)
    rows = []
    result = shardopt.train(X, y, mode="ps", workers=2, ps=2, optimizer="adam", lr=0.01,
                            batch_size=32, last_step=300, log_steps=50, lam=1e-3,
                            callback=lambda info: rows.append(info.iteration))
    assert result.stop_reason == "last_step" and result.steps == 300
    # Asynchronous workers move the global step on between two looks: about every 50 steps, but a
    # chief starved of CPU (a loaded CI machine) can miss a few marks while the other worker runs.
    assert len(rows) >= 3 and rows == sorted(rows) and rows[-1] == 300
    assert result.train_accuracy > 0.6
    stopped = shardopt.train(X, y, mode="ps", workers=2, optimizer="adam", lr=0.01, batch_size=32,
                             last_step=100000, log_steps=10, callback=lambda info: info.iteration < 30)
    assert stopped.stop_reason == "stopped_by_hook"
    assert 30 <= stopped.steps < 100000


def test_metrics_port_serves_the_iteration_the_callback_sees(capfd):
    import re
    import urllib.request
    X, y = classification()
    scraped = []

    def callback(info):
        err = capfd.readouterr().err if not scraped else ""
        if err:
            scraped.append(re.search(r"metrics on (http://127\.0\.0\.1:\d+)/metrics", err).group(1))
        body = urllib.request.urlopen(scraped[0] + "/metrics", timeout=10).read().decode()
        ready = urllib.request.urlopen(scraped[0] + "/readyz", timeout=10).status
        served = dict(line.rsplit(" ", 1) for line in body.splitlines() if line and line[0] != "#")
        scraped.append((info.iteration, float(served["shardopt_driver_iteration"]),
                        float(served["shardopt_driver_objective"]), info.f, ready))

    shardopt.train(X, y, lam=1e-3, shards=2, max_iter=5, metrics_port=0, callback=callback)
    rows = scraped[1:]
    assert len(rows) == 5
    # The text format writes 16 significant digits, not the 17 a double may need.
    assert all(it == served and abs(objective - f) <= 1e-15 * abs(f) and ready == 200
               for it, served, objective, f, ready in rows)
