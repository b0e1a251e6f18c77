"""The fleet, on one machine, with real processes: redis-server, an S3-compatible store
(moto_server), nginx with the shipped deploy/nginx.conf, and three `marks serve` replicas pulling
snapshots from the store and sharing budgets through Redis; then the same budgets on a Redis
Cluster (three masters, three replicas, made with `redis-cli --cluster create`), with a master
killed under load. Asserts with exact counts what docs/fleet.md promises; with --publishes N it
also measures publication latency (docs/fleet.md's figure, by benches/lab/fleet.sh). Every
process it starts is stopped by its PID at the end, even on failure.

Run by tests/live/fleet-check.sh, which installs the parts and builds the binary.
"""

import argparse
import csv
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import boto3

# The one way a harness starts the server: tests/harness/marks_server.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness"))
from marks_server import NotStarted
from marks_server import start as start_marks
from marks_server import stop as stop_marks

BUCKET = "marks-fleet"
PREFIX = "prod"
POLL_MS = 500
# How long a publication or a refusal may take to reach a replica before the check calls it lost:
# a bound on a hang, not a timing (the latency is printed, never asserted); generous because a
# loaded machine's download, check and swap can take many poll intervals.
PUBLISH_DEADLINE_S = 120
RESEARCH_PER_MIN = 60
# A key whose budget leases several tokens a round trip: 3000/min over the 100 ms lease window.
LEASED_PER_MIN = 3000
LEASE = LEASED_PER_MIN * 100 // 60_000
# The companies the fleet's snapshots hold: the two the load reads and enough to page through.
FLEET_COMPANIES = (
    "openai",
    "stripe",
    "airbnb",
    "affirm",
    "abl-space",
    "anthropic",
    "databricks",
    "spacex",
    "klarna",
    "revolut",
    "canva",
    "figma",
)


class Fleet:
    def __init__(self, marks, work, repo):
        self.marks = marks
        self.work = work
        self.repo = repo
        self.processes = {}
        self.ports = {}

    # --- processes -------------------------------------------------------------------------

    def start(self, name, argv, port, env=None):
        """Starts `argv` as `name` and waits for its `port` to take connections (the daemons
        other than marks, which write no ready file)."""
        # The child writes the log through its own copy of the descriptor.
        with open(self.log_of(name), "wb") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.repo)
        self.record(name, process)
        wait_port(port, name, process, self.log_of(name))
        return process

    def record(self, name, process):
        """`name` is stopped by stop_all; its PID is written where fleet-check.sh finds it if
        this driver is killed."""
        self.processes[name] = process
        with open(os.path.join(self.work, "pids"), "a") as pids:
            pids.write(f"{process.pid}\n")

    def stop(self, name, sig=signal.SIGTERM):
        process = self.processes.pop(name, None)
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop_all(self):
        for name in list(self.processes):
            self.stop(name)

    def log_of(self, name):
        return os.path.join(self.work, f"{name}.log")

    def explain(self):
        """On a failure: what each replica's /readyz says of its source, the tail of every
        process's log, and the room left where the replicas cache and the store spills."""
        for name in self.processes:
            if name.startswith("replica"):
                try:
                    source = get(f"http://127.0.0.1:{self.ports[name]}/readyz")[2].get("source")
                except Exception as error:
                    source = f"no answer: {error}"
                print(f"--- {name} /readyz source: {json.dumps(source)}", file=sys.stderr)
            try:
                with open(self.log_of(name), errors="replace") as f:
                    tail = f.readlines()[-25:]
            except OSError:
                continue
            print(f"--- {name}.log, last lines:\n" + "".join(tail), file=sys.stderr)
        usage = shutil.disk_usage(self.work)
        print(
            f"--- {self.work}: {usage.free / 1e9:.2f} GB free of {usage.total / 1e9:.2f} GB",
            file=sys.stderr,
            flush=True,
        )

    # --- parts -----------------------------------------------------------------------------

    def start_cluster(self):
        """Six redis-server nodes in cluster mode, made a cluster of three masters and three
        replicas with `redis-cli --cluster create`; returns the --budget-store URL."""
        ports = []
        while len(ports) < 6:
            port = free_port()
            # Each node also listens on its cluster bus, port + 10000.
            if port + 10000 < 65536 and port_free(port + 10000) and port not in ports:
                ports.append(port)
        for port in ports:
            directory = os.path.join(self.work, f"cluster-{port}")
            os.makedirs(directory)
            self.start(
                f"cluster{port}",
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", directory,
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no",
                 "--save", "", "--appendonly", "no"],
                port=port,
            )  # fmt: skip
        subprocess.run(
            ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports], "--cluster-replicas", "1",
             "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        self.cluster_ports = ports
        wait_until("the cluster is formed", lambda: all(cluster_ok(p, 6) for p in ports), 30)
        # A replica that has not finished its first sync cannot take over from its master.
        wait_until("every replica has synced", lambda: all(synced(p) for p in ports), 30)
        return "redis-cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports[:3])

    def key_id(self, tenant):
        listed = subprocess.run(
            [self.marks, "keys", "list", "--keys", self.keys], check=True, capture_output=True, text=True
        ).stdout
        ids = [line.split()[0] for line in listed.splitlines() if line.split()[1:2] == [tenant]]
        assert len(ids) == 1, listed
        return ids[0]

    def master_of(self, store_key):
        """The port of the master that holds a key's slot now (None while none does, as during
        a failover)."""
        alive = [p for p in self.cluster_ports if f"cluster{p}" in self.processes]
        slot = int(redis_cli(alive[0], "cluster", "keyslot", store_key))
        for line in redis_cli(alive[0], "cluster", "nodes").splitlines():
            fields = line.split()
            if "master" in fields[2] and "fail" not in fields[2]:
                for ranges in fields[8:]:
                    low, _, high = ranges.partition("-")
                    if low.isdigit() and int(low) <= slot <= int(high or low):
                        return int(fields[1].split("@")[0].rsplit(":", 1)[1])
        return None

    def start_redis(self):
        port = self.ports.setdefault("redis", free_port())
        self.start(
            "redis",
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            port=port,
        )

    def start_store(self, moto_server):
        port = free_port()
        self.start("s3", [moto_server, "-H", "127.0.0.1", "-p", str(port)], port=port)
        self.env = dict(
            os.environ,
            AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
            AWS_ACCESS_KEY_ID="fleet-check",
            AWS_SECRET_ACCESS_KEY="fleet-check",
            AWS_REGION="us-east-1",
            AWS_ALLOW_HTTP="true",
        )
        self.s3 = boto3.client(
            "s3",
            endpoint_url=self.env["AWS_ENDPOINT_URL"],
            aws_access_key_id="fleet-check",
            aws_secret_access_key="fleet-check",
            region_name="us-east-1",
        )
        self.s3.create_bucket(Bucket=BUCKET)

    def build(self, version):
        """A snapshot of part of the sample dataset (FLEET_COMPANIES) under a new dataset version.
        The fleet's checks are about publication and budgets, not the data: a small snapshot keeps
        what three replicas, their caches and the store hold to 15 MB a version, not 130 MB."""
        source = os.path.join(self.work, f"dataset-{version}")
        shutil.copytree(os.path.join(self.repo, "sample"), source)
        keep = keep_rows(os.path.join(source, "companies.csv"), lambda row: row["slug"] in FLEET_COMPANIES)
        assert keep == set(FLEET_COMPANIES), f"the sample no longer has {set(FLEET_COMPANIES) - keep}"
        keep_rows(os.path.join(source, "events.csv"), lambda row: row["slug"] in keep)
        toml = os.path.join(source, "dataset.toml")
        with open(toml) as f:
            text = f.read()
        text = re.sub(r'^dataset_version = ".*"$', f'dataset_version = "{version}"', text, flags=re.M)
        with open(toml, "w") as f:
            f.write(text)
        out = os.path.join(self.work, f"{version}.snap")
        # Each version is built on the one before (--previous), as a publisher builds: its
        # publication log extends the one the replicas serve, so they put it in force (a
        # replica refuses a rollback).
        previous = os.path.join(self.work, "previous.snap")
        subprocess.run(
            [
                self.marks,
                "build",
                "--source",
                source,
                "--out",
                out,
                "--signing-key",
                os.path.join(self.repo, "sample/demo-signing-key.pem"),
                "--quiet",
                *(["--previous", previous] if os.path.exists(previous) else []),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=self.repo,
        )
        shutil.copy(out, previous)
        return out

    def publish(self, snapshot):
        """`marks publish`; the local file is removed once the store holds it."""
        done = subprocess.run(
            [self.marks, "publish", "--snapshot", snapshot, "--to", f"s3://{BUCKET}/{PREFIX}"],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            cwd=self.repo,
        )
        os.remove(snapshot)
        return done.stdout.strip()

    def issue(self, tier, rate=None, tenant="fleet"):
        argv = [self.marks, "keys", "issue", "--keys", self.keys, "--tier", tier, "--tenant", tenant]
        if rate:
            argv += ["--rate-per-min", str(rate)]
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()

    def start_replica(self, index, store=None):
        name = f"replica{index}"
        argv = [
            "--snapshot-from",
            f"s3://{BUCKET}/{PREFIX}",
            "--snapshot-cache",
            os.path.join(self.work, f"cache-{index}"),
            "--poll-interval",
            f"{POLL_MS}ms",
            "--budget-store",
            store or f"redis://127.0.0.1:{self.ports['redis']}",
            # The exact counts must not depend on the machine's speed: on a loaded 2-core box a
            # process can stall past the 5 ms default, and a replica would then meter locally.
            # A stopped Redis still fails at once (connection refused), so fallback is tested.
            "--budget-store-timeout",
            "1s",
            "--client-ip-header",
            "X-Forwarded-For",
            "--max-connections-per-address",
            "100000",
            "--keys",
            self.keys,
            "--cursor-key",
            self.cursor_key,
            "--no-access-log",
            "--log-format",
            "json",
        ]
        # Started as every harness starts the server (tests/harness/marks_server.py): on port 0,
        # listening once the ready file names its address, written once requests are answered.
        with open(self.log_of(name), "wb") as log:
            running = start_marks(self.marks, *argv, stdout=log, stderr=log, env=self.env, cwd=self.repo)
        self.record(name, running.process)
        self.ports[name] = int(running.addr.rsplit(":", 1)[1])

    def start_nginx(self, name, round_robin):
        """Runs deploy/nginx.conf as shipped, with its addresses rewritten to this run's ports
        (and, for round robin, its `hash` line taken out)."""
        with open(os.path.join(self.repo, "deploy/nginx.conf")) as f:
            conf = f.read()
        port = free_port()
        for index in (1, 2, 3):
            conf = conf.replace(f"server 127.0.0.1:808{index} ", f"server 127.0.0.1:{self.ports[f'replica{index}']} ")
        conf = conf.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{port};")
        # Which replica answered, for the checks.
        conf = conf.replace(
            "proxy_pass http://marks;",
            "proxy_pass http://marks;\n            add_header X-Served-By $upstream_addr always;",
        )
        if round_robin:
            conf, removed = re.subn(r"^\s*hash \$http_x_api_key consistent;\n", "", conf, flags=re.M)
            assert removed == 1, "deploy/nginx.conf no longer balances by hash $http_x_api_key"
        prefix = os.path.join(self.work, name)
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        path = os.path.join(prefix, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        self.start(name, ["nginx", "-p", prefix, "-c", path, "-g", "daemon off;"], port=port)
        return f"http://127.0.0.1:{port}"

    def replica_url(self, index):
        return f"http://127.0.0.1:{self.ports[f'replica{index}']}"

    def readyz(self, index):
        return get(self.replica_url(index) + "/readyz")[2]

    def metric(self, index, name):
        _, _, body = get(self.replica_url(index) + "/metrics", raw=True)
        for line in body.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"replica{index} reports no {name}")


# --- HTTP -----------------------------------------------------------------------------------


def get(url, key=None, raw=False):
    request = urllib.request.Request(url, headers={"X-API-Key": key} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, headers, body = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, headers, body = error.code, error.headers, error.read()
    text = body.decode()
    return status, headers, text if raw else (json.loads(text) if text else None)


def redis_cli(port, *argv):
    return subprocess.run(["redis-cli", "-p", str(port), *argv], check=True, capture_output=True, text=True).stdout


def cluster_ok(port, nodes):
    try:
        info = redis_cli(port, "cluster", "info")
    except subprocess.CalledProcessError:
        return False
    return "cluster_state:ok" in info and f"cluster_known_nodes:{nodes}" in info


def synced(port):
    """A master, or a replica whose link to its master is up."""
    info = redis_cli(port, "info", "replication")
    return "role:master" in info or "master_link_status:up" in info


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, name, process, log, seconds=60):
    """Until something listens on `port`; raises with `name`'s log if the process exits first."""

    def listening():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} exited with {process.returncode}:\n" + tail_of(log))
        if listening():
            return
        time.sleep(0.05)
    raise SystemExit(f"{name} is not listening on {port} after {seconds}s")


def tail_of(log, chars=3000):
    with open(log, errors="replace") as f:
        return f.read()[-chars:]


def wait_until(what, predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds}s: {what}")


def ok(message):
    print(f"ok: {message}", flush=True)


class Load:
    """Requests in a loop through a balancer until stopped; every answer must be a 200."""

    PATHS = (
        "/v1/companies?limit=5",
        "/v1/companies/openai",
        "/v1/companies/stripe/events",
        "/v1/companies?sort=-value_usd&limit=3",
    )

    def __init__(self, base, key):
        self.base, self.key = base, key
        self.done, self.failures, self.versions = 0, [], set()
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        i = 0
        while self.running:
            path = self.PATHS[i % len(self.PATHS)]
            i += 1
            try:
                status, _, body = get(self.base + path, self.key)
                if status != 200:
                    self.failures.append(f"{path}: {status} {body}")
                elif isinstance(body, dict) and "meta" in body:
                    self.versions.add(body["meta"].get("dataset_version"))
            except Exception as error:  # a connection error is a failed request too
                self.failures.append(f"{path}: {error}")
            self.done += 1

    def stop(self):
        self.running = False
        self.thread.join()
        assert self.done > 0, "the load sent no request"
        assert not self.failures, f"{len(self.failures)} of {self.done} requests failed: {self.failures[:5]}"
        return self.done


# --- checks ---------------------------------------------------------------------------------


def spend(base, key, count, midway=None):
    """Sends `count` requests one after another; returns the answers and the seconds taken."""
    answers = []
    started = time.monotonic()
    for i in range(count):
        if midway and i == count // 3:
            midway()
        status, headers, _ = get(base + "/v1/companies?limit=1", key)
        answers.append((status, headers))
    return answers, time.monotonic() - started


def spend_round_robin(urls, key, count, midway=None):
    """`spend`, the requests going to each replica in turn (no balancer in between)."""
    answers = []
    started = time.monotonic()
    for i in range(count):
        if midway and i == count // 3:
            midway()
        status, headers, _ = get(urls[i % len(urls)] + "/v1/companies?limit=1", key)
        answers.append((status, headers))
    return answers, time.monotonic() - started


def spend_until_refused(urls, key, refusals=30):
    """Round robin until the budget has refused `refusals` requests, however fast this machine
    sends them: the bound is checked against the time they took."""
    answers = []
    started = time.monotonic()
    i = 0
    while sum(1 for status, _ in answers if status == 429) < refusals:
        status, headers, _ = get(urls[i % len(urls)] + "/v1/companies?limit=1", key)
        answers.append((status, headers))
        i += 1
        assert i < 200_000, "the budget never refused"
    return answers, time.monotonic() - started


def check_exact_budget(answers, elapsed, replicas_sharing=1, label="", per_min=RESEARCH_PER_MIN, leased=0):
    """At most what the budget allows across the fleet: the budget at once, plus what refilled
    while the requests ran, plus one for the token refilling as the count is taken, plus the
    tokens the replicas may hold from leases granted before (`leased` in all: docs/fleet.md)."""
    refill = int(elapsed * per_min / 60)
    allowed = replicas_sharing * (per_min + refill + 1) + leased
    granted = sum(1 for status, _ in answers if status == 200)
    refused = [headers for status, headers in answers if status == 429]
    others = [status for status, _ in answers if status not in (200, 429)]
    assert not others, f"{label}: answers other than 200 and 429: {others}"
    assert granted <= allowed, f"{label}: {granted} answered 200, more than {allowed}"
    assert granted >= per_min - leased, f"{label}: only {granted} answered 200, fewer than the budget"
    assert refused, f"{label}: nothing was refused: the budget did not hold"
    for headers in refused:
        assert headers["X-RateLimit-Limit"] == str(per_min), headers
        assert headers["X-RateLimit-Remaining"] == "0", headers
        assert int(headers["Retry-After"]) >= 1, headers
    return granted, allowed


def version(n):
    """The n-th dataset version this run publishes: a date, as dataset versions are."""
    return (datetime.date(2026, 12, 1) + datetime.timedelta(days=n)).isoformat()


def keep_rows(path, wanted):
    """Rewrites the CSV file at `path` with the rows `wanted` accepts; returns their slugs."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, [row for row in reader if wanted(row)]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return {row["slug"] for row in rows}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--marks", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--moto-server", required=True)
    parser.add_argument("--publishes", type=int, default=3, help="publications timed (docs/fleet.md's figure uses 10)")
    args = parser.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    fleet = Fleet(os.path.abspath(args.marks), args.work, repo)
    try:
        run(fleet, args)
    except BaseException:
        fleet.explain()
        raise
    finally:
        fleet.stop_all()


def run(fleet, args):
    fleet.start_redis()
    fleet.start_store(args.moto_server)
    fleet.keys = os.path.join(fleet.work, "keys.toml")
    shutil.copy(os.path.join(fleet.repo, "sample/demo-keys.toml"), fleet.keys)
    fleet.cursor_key = os.path.join(fleet.work, "cursor.key")
    with open(fleet.cursor_key, "wb") as f:
        f.write(os.urandom(32))
    load_key = fleet.issue("enterprise", rate=1_000_000_000)
    # One fresh research key per budget check, issued before the replicas start (checking that
    # a replica knows a key would spend some of its budget).
    research_keys = [fleet.issue("research") for _ in range(3)]
    # And for the cluster: a research key before, during and after a master fails; a key that leases.
    cluster_keys = [fleet.issue("research", tenant=f"cluster-{n}") for n in range(3)]
    leased_key = fleet.issue("business", rate=LEASED_PER_MIN)

    # A replica refuses to start with nothing published and nothing cached.
    try:
        running = start_marks(
            fleet.marks,
            "--snapshot-from",
            f"s3://{BUCKET}/{PREFIX}",
            "--snapshot-cache",
            os.path.join(fleet.work, "cache-empty"),
            "--keys",
            fleet.keys,
            env=fleet.env,
            cwd=fleet.repo,
        )
    except NotStarted as error:
        refused = str(error)
    else:
        stop_marks(running)
        raise AssertionError("a replica with nothing published and nothing cached started")
    assert "no cached snapshot" in refused, refused
    ok("a replica with nothing published and nothing cached refuses to start: " + refused.strip().splitlines()[-1])

    first = fleet.build(version(0))
    fleet.publish(first)
    for index in (1, 2, 3):
        fleet.start_replica(index)
    for index in (1, 2, 3):
        ready = fleet.readyz(index)
        assert ready["dataset_version"] == version(0), ready
        assert ready["budgets"]["mode"] == "shared", ready
    ok("three replicas serve the published snapshot, budgets shared")
    round_robin = fleet.start_nginx("nginx-rr", round_robin=True)
    by_key = fleet.start_nginx("nginx-hash", round_robin=False)

    # 1. Shared budgets, exact across replicas, with round-robin balancing.
    answers, elapsed = spend(round_robin, research_keys[0], 150)
    granted, allowed = check_exact_budget(answers, elapsed, label="round robin")
    served_by = {headers.get("X-Served-By") for _, headers in answers}
    assert len(served_by) == 3, f"round robin reached {served_by}, not all three replicas"
    remaining = [int(h["X-RateLimit-Remaining"]) for status, h in answers if status == 200]
    assert remaining[:RESEARCH_PER_MIN] == sorted(remaining[:RESEARCH_PER_MIN], reverse=True), remaining
    fallbacks = sum(fleet.metric(i, "marks_budget_fallbacks_total") for i in (1, 2, 3))
    assert fallbacks == 0, f"{fallbacks} requests were metered locally during the exact-budget check"
    ok(
        f"research key, 150 requests round robin over 3 replicas in {elapsed:.2f}s: {granted} answered 200 "
        f"(at most {allowed}), {150 - granted} answered 429 with Limit 60, Remaining 0 and Retry-After; "
        f"remaining counts never rise across replicas"
    )

    # The failed-authentication throttle is shared too: one address, bad keys round robin.
    started = time.monotonic()
    statuses = [get(round_robin + "/v1/companies", f"vmk_wrong_{i}")[0] for i in range(45)]
    refill = int((time.monotonic() - started) * 20 / 60)
    unauthorized = statuses.count(401)
    assert set(statuses) == {401, 429}, statuses
    assert 20 <= unauthorized <= 20 + refill + 1, f"{unauthorized} answered 401, the address may fail 20 times a minute"
    ok(
        f"failed authentication from one address, round robin: {unauthorized} of 45 answered 401 "
        f"(20 a minute across the fleet), the rest 429"
    )

    # The shipped balancing by key sends one key to one replica.
    answers, _ = spend(by_key, load_key, 12)
    assert len({h.get("X-Served-By") for _, h in answers}) == 1, "hash $http_x_api_key spread one key"
    ok("balanced by hash $http_x_api_key consistent: one key, one replica")

    # 2. Publishing reaches every replica, with no failed request under load.
    latencies = []
    load = Load(by_key, load_key)
    for n in range(args.publishes):
        published_version = version(n + 1)
        snapshot = fleet.build(published_version)
        fleet.publish(snapshot)
        published = time.monotonic()
        reached = {}
        while len(reached) < 3:
            for index in (1, 2, 3):
                if index not in reached and fleet.readyz(index).get("dataset_version") == published_version:
                    reached[index] = time.monotonic() - published
            assert time.monotonic() - published < PUBLISH_DEADLINE_S, (
                f"{published_version} did not reach every replica: {reached}"
            )
            time.sleep(0.01)
        latencies.append(max(reached.values()))
    served = load.stop()
    current_version = published_version
    ok(
        f"{args.publishes} publishes reached all three replicas: median {statistics.median(latencies):.2f}s, "
        f"max {max(latencies):.2f}s from `marks publish` returning (poll interval {POLL_MS / 1000}s); "
        f"{served} requests under load, none failed, versions seen {sorted(load.versions)}"
    )

    # 3. A corrupt object and a manifest with a wrong sha256 are refused; the old one serves on.
    with open(fleet.build(version(98)), "rb") as f:
        good = f.read()
    corrupt = bytearray(good)
    corrupt[len(corrupt) // 2] ^= 0xFF
    cases = [
        ("corrupt object", hashlib.sha256(corrupt).hexdigest(), bytes(corrupt), "refused"),
        ("manifest with a wrong sha256", hashlib.sha256(b"not this snapshot").hexdigest(), good, "sha256"),
    ]
    for label, sha, body, reason_word in cases:
        refusals = [fleet.metric(i, "marks_snapshot_source_refusals_total") for i in (1, 2, 3)]
        fleet.s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/snapshots/{sha}.snap", Body=body)
        manifest = {
            "sha256": sha,
            "size": len(body),
            "dataset_version": version(98),
            "methodology_version": "v0.3.0",
            "published_at": "2026-11-23T00:00:00Z",
        }
        fleet.s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/CURRENT", Body=json.dumps(manifest).encode())
        for index in (1, 2, 3):
            wait_until(
                f"replica{index} refuses the {label}",
                lambda index=index, refusals=refusals: (
                    fleet.metric(index, "marks_snapshot_source_refusals_total") > refusals[index - 1]
                ),
                PUBLISH_DEADLINE_S,
            )
            ready = fleet.readyz(index)
            assert ready["dataset_version"] == current_version, ready
            error = ready["source"]["last_error"]
            assert error and sha in error["reason"] and reason_word in error["reason"], ready
        ok(f"{label} refused by all three, each still serving {current_version}: {error['reason'][:150]}")
    fleet.publish(fleet.build(version(99)))
    for index in (1, 2, 3):
        wait_until(
            f"replica{index} takes the next good publish",
            lambda index=index: fleet.readyz(index).get("dataset_version") == version(99),
            PUBLISH_DEADLINE_S,
        )
    ok("the next good publish after the refusals reaches all three")

    # 4. Redis stops: replicas answer on their own buckets (bounded), and say so; it comes back.
    fleet.stop("redis")
    for index in (1, 2, 3):
        status, _, _ = get(fleet.replica_url(index) + "/v1/companies?limit=1", load_key)
        assert status == 200, f"replica{index} answered {status} without Redis"
        mode = fleet.readyz(index)["budgets"]["mode"]
        assert mode == "local_fallback", f"replica{index} budgets mode {mode} without Redis"
    answers, elapsed = spend(round_robin, research_keys[1], 250)
    granted, allowed = check_exact_budget(answers, elapsed, replicas_sharing=3, label="Redis down")
    ok(
        f"Redis down: replicas answer on local buckets (readyz budgets.mode local_fallback); a research key "
        f"got {granted} of 250 round robin, at most {allowed} (3 replicas x its budget), the rest 429"
    )
    fleet.start_redis()

    def shared_again(index):
        get(fleet.replica_url(index) + "/v1/companies?limit=1", load_key)
        return fleet.readyz(index)["budgets"]["mode"] == "shared"

    for index in (1, 2, 3):
        wait_until(f"replica{index} returns to shared budgets", lambda index=index: shared_again(index), 30)
    ok("Redis back: all three replicas return to shared budgets")

    # 5. A replica killed mid-load: nginx routes around it, no request fails, no budget exceeded.
    load = Load(by_key, load_key)
    answers, elapsed = spend(round_robin, research_keys[2], 150, midway=lambda: fleet.stop("replica3", signal.SIGKILL))
    served = load.stop()
    granted, allowed = check_exact_budget(answers, elapsed, label="replica killed")
    ok(
        f"replica3 killed mid-load: {served} requests through nginx, none failed; the research key got "
        f"{granted} of 150 (at most {allowed})"
    )

    check_cluster(fleet, cluster_keys, leased_key, load_key)
    print("fleet check passed", flush=True)


def check_cluster(fleet, research, leased_key, load_key):
    """6. The same budgets on a Redis Cluster: exact across three replicas, a leased key within
    its stated bound, and a master killed under load."""
    store = fleet.start_cluster()
    for index in (1, 2):
        fleet.stop(f"replica{index}")
    for index in (4, 5, 6):
        fleet.start_replica(index, store=store)
    urls = [fleet.replica_url(i) for i in (4, 5, 6)]
    for index in (4, 5, 6):
        assert fleet.readyz(index)["budgets"] == {"mode": "shared", "store": store}, fleet.readyz(index)
    ok(f"a Redis Cluster of 3 masters and 3 replicas (redis-cli --cluster create); 3 replicas on {store}")

    answers, elapsed = spend_round_robin(urls, research[0], 150)
    granted, allowed = check_exact_budget(answers, elapsed, label="cluster")
    fallbacks = sum(fleet.metric(i, "marks_budget_fallbacks_total") for i in (4, 5, 6))
    assert fallbacks == 0, f"{fallbacks} requests metered locally on the cluster"
    ok(f"cluster: research key, 150 requests round robin: {granted} answered 200 (at most {allowed}), the rest 429")

    # A key that leases LEASE tokens a round trip: exact within R x (L - 1), few round trips.
    calls_before = sum(fleet.metric(i, "marks_budget_store_calls_total") for i in (4, 5, 6))
    answers, elapsed = spend_until_refused(urls, leased_key)
    count = len(answers)
    held = 3 * (LEASE - 1)
    granted, allowed = check_exact_budget(answers, elapsed, label="leased", per_min=LEASED_PER_MIN, leased=held)
    calls = sum(fleet.metric(i, "marks_budget_store_calls_total") for i in (4, 5, 6)) - calls_before
    leased = sum(fleet.metric(i, "marks_budget_leased_total") for i in (4, 5, 6))
    assert leased > 0 and calls < granted, (calls, granted, leased)
    ok(
        f"cluster: a {LEASED_PER_MIN}/min key leasing {LEASE} tokens a round trip: {granted} of {count} answered "
        f"200 in {elapsed:.1f}s (at most {allowed}: budget, refill, one, and 3 x {LEASE - 1} held), "
        f"{calls:.0f} round trips"
    )

    # A master killed while the load runs and a research key spends: every request answered
    # (on local buckets while the cluster fails over, bounded), then shared and exact again.
    store_key = f"marks:budget:key:{fleet.key_id('cluster-1')}"
    master = fleet.master_of(store_key)
    assert master is not None, store_key
    load = Load(urls[0], load_key)
    load_on = Load(urls[1], load_key)
    killed = []

    def kill_master():
        fleet.stop(f"cluster{master}", signal.SIGKILL)
        killed.append(time.monotonic())

    answers, elapsed = spend_round_robin(urls, research[1], 250, midway=kill_master)
    granted, allowed = check_exact_budget(answers, elapsed, replicas_sharing=3, label="master killed")
    survivors = [p for p in fleet.cluster_ports if p != master]
    try:
        wait_until(
            "the cluster fails over",
            lambda: cluster_ok(survivors[0], 6) and fleet.master_of(store_key) not in (None, master),
            30,
        )
    except AssertionError:
        print(redis_cli(survivors[0], "cluster", "info"), redis_cli(survivors[0], "cluster", "nodes"), flush=True)
        raise
    failed_over = time.monotonic() - killed[0]

    def shared_again(index):
        get(fleet.replica_url(index) + "/v1/companies?limit=1", load_key)
        return fleet.readyz(index)["budgets"]["mode"] == "shared"

    for index in (4, 5, 6):
        wait_until(f"replica{index} returns to shared budgets", lambda index=index: shared_again(index), 30)
    served = load.stop() + load_on.stop()
    ok(
        f"master 127.0.0.1:{master} killed under load: {served} requests, none failed; the cluster failed over in "
        f"{failed_over:.1f}s; the research key got {granted} of 250 meanwhile (at most {allowed}: 3 replicas' own "
        f"buckets while the store did not answer)"
    )

    answers, elapsed = spend_round_robin(urls, research[2], 150)
    granted, allowed = check_exact_budget(answers, elapsed, label="after failover")
    ok(
        f"after the failover, a research key round robin: {granted} of 150 answered 200 "
        f"(at most {allowed}): exact again"
    )


if __name__ == "__main__":
    main()
