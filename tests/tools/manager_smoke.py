#!/usr/bin/env python3
"""Runs a generated manager against a STAND-IN Kubernetes API server on loopback.

This is not a cluster: the stand-in answers only what the manager asks at start and while
idle (`/version`, API discovery, empty lists, watches that stay open). It shows that the
manager fails fast with the right message when the API server or a CRD is missing, becomes
ready once its caches have synced, serves metrics, and stops cleanly on SIGTERM; and that a
standby waiting for a lease it cannot take (the stand-in refuses writes) stops being ready
after its lease duration, and never reconciles.

With SMOKE_WEBHOOK=<path of the first kind's defaulting webhook>, it also checks the
webhook server of a project with webhooks: without a certificate the manager exits naming
--webhook-cert-path; with one (made by openssl), it answers an AdmissionReview posted over
TLS with the defaults as a JSON patch. With SMOKE_CONVERSION=<another version of the first
kind> too, it posts a ConversionReview of an object of the first kind to /convert and checks
the object comes back in that version, its name and spec kept.

With SMOKE_EXTERNAL=<group/version/plural of another project's kind>, it checks the manager
exits naming that CRD and its project when the API server lacks only that CRD.

Usage: manager_smoke.py MANAGER_BINARY GROUP/VERSION/PLURAL/KIND[/cluster] ...
(GROUP `core` for the core group; the first kind is the one listed with an object.)
Prints one line per check, `ok: ...` or `FAIL: ...`; exits 1 if any failed.
"""

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAILURES = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


class StandIn(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    resources = []  # (group, version, plural, kind, namespaced)
    requests = []

    def log_message(self, *args):
        pass

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse_write(self):
        StandIn.requests.append(f"{self.command} {self.path}")
        self.send_json(405, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                             "code": 405, "message": "the stand-in API server only reads"})

    do_POST = do_PUT = do_PATCH = do_DELETE = refuse_write

    def do_GET(self):
        path, _, query = self.path.partition("?")
        StandIn.requests.append(f"GET {self.path}")
        if path == "/version":
            info = {k: "" for k in ("buildDate", "compiler", "gitCommit", "gitTreeState", "goVersion", "platform")}
            info.update(major="1", minor="33", gitVersion="v1.33.0-stand-in")
            return self.send_json(200, info)
        served = [{"name": p, "singularName": k.lower(), "namespaced": n, "kind": k,
                   "verbs": ["get", "list", "watch", "patch", "update"]}
                  for g, v, p, k, n in StandIn.resources if path == base(g, v)]
        if served:
            return self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                        "groupVersion": path.removeprefix("/apis/"), "resources": served})
        for group, version, plural, kind, namespaced in StandIn.resources:
            if path.startswith(base(group, version)) and path.endswith(f"/{plural}"):
                if "watch=true" in query or "watch=1" in query:
                    return self.hold_watch()
                items = [reconciled(group, version, kind, namespaced)] if (group, version, plural) == StandIn.resources[0][:3] else []
                return self.send_json(200, {"apiVersion": f"{group}/{version}", "kind": f"{kind}List",
                                            "metadata": {"resourceVersion": "1"}, "items": items})
        self.send_json(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                             "reason": "NotFound", "code": 404, "message": f"{path} not found"})

    def hold_watch(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                time.sleep(0.5)
                self.wfile.flush()
        except OSError:
            pass


def base(group, version):
    """Where a group-version is served: `core` is the legacy `/api/v1`."""
    return f"/api/{version}" if group == "core" else f"/apis/{group}/{version}"


def reconciled(group, version, kind, namespaced):
    """An object the generated controller has already reconciled: finalizer set, status
    Available. Reconciling it again sends no request, and counts one `success` (the reconcile
    asks for nothing; the controller's builder resyncs it later)."""
    metadata = {"name": "stand-in", "uid": "0", "resourceVersion": "1", "generation": 1,
                "finalizers": [f"{group}/finalizer"]}
    if namespaced:
        metadata["namespace"] = "default"
    condition = {"type": "Available", "status": "True", "reason": "Reconciled",
                 "message": f"The {kind} is reconciled", "observedGeneration": 1,
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
    return {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": metadata, "spec": {},
            "status": {"observedGeneration": 1, "conditions": [condition]}}


def watches():
    """The watch requests the stand-in has been sent."""
    return [r for r in StandIn.requests if "watch=" in r]


def serve(resources):
    StandIn.resources = resources
    StandIn.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def kubeconfig(directory, port):
    path = os.path.join(directory, f"kubeconfig-{port}")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "stand-in",
                   "clusters": [{"name": "stand-in", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                   "users": [{"name": "stand-in", "user": {"token": "stand-in"}}],
                   "contexts": [{"name": "stand-in", "context": {"cluster": "stand-in", "user": "stand-in",
                                                                 "namespace": "default"}}]}, f)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, config, probes, metrics, *flags):
    """The manager; its webhooks off unless `flags` name --webhook-bind-address."""
    env = dict(os.environ, KUBECONFIG=config, RUST_LOG=os.environ.get("SMOKE_LOG", "info"))
    if not any(f.startswith("--webhook-bind-address") for f in flags):
        flags = (*flags, "--webhook-bind-address=0")
    return subprocess.Popen(
        [binary, f"--health-probe-bind-address=127.0.0.1:{probes}",
         f"--metrics-bind-address=127.0.0.1:{metrics}", "--metrics-secure=false", *flags],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def check_webhooks(binary, work, resources, path):
    """The webhook server, through the manager binary: no certificate, then one from openssl."""
    group, version, plural, kind, namespaced = resources[0]
    server = serve(resources)
    config = kubeconfig(work, server.server_address[1])
    certs = os.path.join(work, "certs")
    os.makedirs(certs, exist_ok=True)
    port = free_port()
    webhooks = (f"--webhook-bind-address=127.0.0.1:{port}", f"--webhook-cert-path={certs}")
    manager = start(binary, config, free_port(), free_port(), *webhooks)
    output, _ = manager.communicate(timeout=60)
    check(manager.returncode != 0 and "--webhook-cert-path" in output,
          f"webhooks without a certificate: exits {manager.returncode} naming --webhook-cert-path")

    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", os.path.join(certs, "tls.key"),
                    "-out", os.path.join(certs, "tls.crt")],
                   check=True, capture_output=True)
    probes = free_port()
    metrics = free_port()
    manager = follow(start(binary, config, probes, metrics, *webhooks))
    obj = {"apiVersion": f"{group}/{version}", "kind": kind,
           "metadata": {"name": "smoke", "namespace": "default"}, "spec": {}}
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "5d6e3f5a-0000-4000-8000-000000000001",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "operation": "CREATE", "userInfo": {"username": "smoke"}, "object": obj}}
    context = ssl.create_default_context(cafile=os.path.join(certs, "tls.crt"))

    def post(path, body):
        answer, deadline = None, time.time() + 30
        while answer is None and time.time() < deadline and manager.poll() is None:
            try:
                connection = http.client.HTTPSConnection("localhost", port, context=context,
                                                         timeout=5)
                connection.request("POST", path, json.dumps(body),
                                   {"Content-Type": "application/json"})
                answer = json.loads(connection.getresponse().read())
            except OSError:
                time.sleep(0.2)
        return (answer or {}).get("response", {})

    response = post(path, review)
    patch = json.loads(bytes(response.get("patch", [])) or b"[]")
    check(response.get("allowed") is True and response.get("uid") == review["request"]["uid"]
          and any(op.get("path", "").startswith("/spec") for op in patch),
          f"an AdmissionReview posted over TLS to {path} is answered with the defaults ({patch})")
    if os.environ.get("SMOKE_CONVERSION"):
        desired = f"{group}/{os.environ['SMOKE_CONVERSION']}"
        obj = dict(obj, spec={"foo": "smoke"})
        review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {
            "uid": "5d6e3f5a-0000-4000-8000-000000000002", "desiredAPIVersion": desired,
            "objects": [obj]}}
        response = post("/convert", review)
        converted = response.get("convertedObjects") or [{}]
        check(response.get("result", {}).get("status") == "Success"
              and response.get("uid") == review["request"]["uid"]
              and converted[0].get("apiVersion") == desired
              and converted[0].get("metadata", {}).get("name") == "smoke"
              and converted[0].get("spec") == {"foo": "smoke"},
              f"a ConversionReview posted to /convert is answered with the object in {desired} ({response})")
    # Stopped once ready and every started controller logged its cache synced, so that the
    # SIGTERM meets a manager at work: a SIGTERM before a cache synced is another case (the
    # runtime's tests and tests/real/namespaced.rs: such a controller stops at once). A manager
    # serving conversions is ready before its caches sync (they may need its /convert), so
    # neither readiness nor every watch sent says it.
    def synced():
        started = get(metrics, "/metrics")[1].count("controller_runtime_max_concurrent_reconciles{")
        return started > 0 and sum("cache synced" in line for line in manager.lines) >= started
    deadline = time.time() + 60
    while time.time() < deadline and manager.poll() is None and (
            get(probes, "/readyz")[0] != 200
            or len(watches()) < len(resources)
            or not synced()):
        time.sleep(0.2)
    check(synced(), "every started controller's cache synced before the SIGTERM")
    output = stop(manager)
    check(manager.returncode == 0, f"SIGTERM: a manager serving webhooks exits {manager.returncode}")
    server.shutdown()
    return output


def follow(manager):
    """`manager`, its output read as it comes into `manager.lines`, so that a check can wait
    for a line; `stop` returns it all."""
    manager.lines = []

    def read():
        for line in manager.stdout:
            manager.lines.append(line)
    manager.reader = threading.Thread(target=read, daemon=True)
    manager.reader.start()
    return manager


def stop(manager):
    manager.send_signal(signal.SIGTERM)
    reader = getattr(manager, "reader", None)
    if reader is not None:
        try:
            manager.wait(timeout=20)
        except subprocess.TimeoutExpired:
            manager.kill()
            manager.wait()
        reader.join()
        return "".join(manager.lines)
    try:
        output, _ = manager.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        manager.kill()
        output, _ = manager.communicate()
    return output


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return None, ""


def main():
    binary = sys.argv[1]
    resources = []
    for spec in sys.argv[2:]:
        parts = spec.split("/")
        resources.append((parts[0], parts[1], parts[2], parts[3], len(parts) < 5))
    work = tempfile.mkdtemp()

    # 1. No API server listens.
    manager = start(binary, kubeconfig(work, free_port()), free_port(), free_port())
    output, _ = manager.communicate(timeout=120)
    check(manager.returncode != 0 and "cannot reach the Kubernetes API server" in output,
          f"no API server: exits {manager.returncode} saying it cannot reach it")

    # 2. The API server lacks the CRDs.
    server = serve([])
    manager = start(binary, kubeconfig(work, server.server_address[1]), free_port(), free_port())
    output, _ = manager.communicate(timeout=60)
    group, version, plural = resources[0][:3]
    check(manager.returncode != 0 and f"the CRD {plural}.{group} ({group}/{version}) is not installed: run `make install`" in output,
          f"CRDs missing: exits {manager.returncode} naming the CRD and `make install`")
    server.shutdown()

    # 2b. With SMOKE_EXTERNAL=GROUP/VERSION/PLURAL, another project's kind a controller
    # watches: the API server lacks only its CRD (the manager would wait for it for ever).
    if os.environ.get("SMOKE_EXTERNAL"):
        group, version, plural = os.environ["SMOKE_EXTERNAL"].split("/")
        server = serve([r for r in resources if r[:3] != (group, version, plural)])
        manager = start(binary, kubeconfig(work, server.server_address[1]), free_port(), free_port())
        output, _ = manager.communicate(timeout=60)
        check(manager.returncode != 0 and f"the CRD {plural}.{group} ({group}/{version}) is not installed: install the project that defines it first" in output,
              f"another project's CRD missing: exits {manager.returncode} naming it and that project")
        server.shutdown()

    # 3. The CRDs are installed: ready once the caches sync, metrics served, SIGTERM stops it.
    server = serve(resources)
    probes, metrics = free_port(), free_port()
    manager = start(binary, kubeconfig(work, server.server_address[1]), probes, metrics)
    ready, statuses = False, set()
    deadline = time.time() + 60
    while time.time() < deadline and manager.poll() is None:
        status, _ = get(probes, "/readyz")
        statuses.add(status)
        if status == 200:
            ready = True
            break
        time.sleep(0.2)
    check(ready, f"/readyz answers 200 once the caches synced (saw {sorted(s for s in statuses if s)})")
    check(get(probes, "/healthz")[0] == 200, "/healthz answers 200")
    controller = resources[0][3].lower()
    status, text = get(metrics, "/metrics")
    zero = f'controller_runtime_reconcile_panics_total{{controller="{controller}"}} 0'
    check(zero in text, f"/metrics has every series from the start: {zero}")
    counted = f'controller_runtime_reconcile_total{{controller="{controller}",result="success"}} 1'
    text = ""
    deadline = time.time() + 20
    while time.time() < deadline and counted not in text:
        status, text = get(metrics, "/metrics")
        time.sleep(0.2)
    check(counted in text, f"the listed object was reconciled, and /metrics counts it: {counted}")
    writes = [r for r in StandIn.requests if not r.startswith("GET")]
    check(not writes, f"reconciling an up-to-date object wrote nothing ({writes})")
    watched = watches()
    check(len(watched) >= len(resources), f"every controller watches its kind ({len(watched)} watches)")
    output = stop(manager)
    check(manager.returncode == 0 and "controller stopped" in output,
          f"SIGTERM: exits {manager.returncode} after the controllers stopped")
    server.shutdown()

    # 4. A standby whose lease requests fail: ready at first, not ready after the lease
    # duration (3 s here), no controller started, and SIGTERM stops it.
    server = serve(resources)
    probes, metrics = free_port(), free_port()
    manager = start(binary, kubeconfig(work, server.server_address[1]), probes, metrics,
                    "--leader-elect", "--leader-election-namespace=default",
                    "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
                    "--leader-elect-retry-period=500ms")
    seen, deadline = [], time.time() + 30
    while time.time() < deadline and manager.poll() is None:
        status, _ = get(probes, "/readyz")
        if status and (not seen or seen[-1] != status):
            seen.append(status)
        if seen[-2:] == [200, 503]:
            break
        time.sleep(0.2)
    check(seen[-2:] == [200, 503], f"a standby that cannot reach its lease goes from ready to not ready (saw {seen})")
    leases = [r for r in StandIn.requests if "/leases" in r]
    check(any(r.startswith("POST") for r in leases), f"the standby tried to take the lease ({len(leases)} lease requests)")
    watched = watches()
    check(not watched, f"a standby starts no controller ({len(watched)} watches)")
    output = stop(manager)
    check(manager.returncode == 0 and "stopped before becoming the leader" in output,
          f"SIGTERM: a standby exits {manager.returncode}")
    server.shutdown()

    # 5. Webhooks, when the project has them.
    if os.environ.get("SMOKE_WEBHOOK"):
        output = check_webhooks(binary, work, resources, os.environ["SMOKE_WEBHOOK"])

    if FAILURES:
        print("--- last manager output\n" + output)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
