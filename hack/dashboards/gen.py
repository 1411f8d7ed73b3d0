#!/usr/bin/env python3
"""Generates the Grafana dashboards shipped in charts/iocache/dashboards/.

Dashboards are written as data here and rendered to JSON, so panels stay consistent (same
datasource variable, same label filters) and reviews read the queries, not Grafana's layout noise.
Run: python3 hack/dashboards/gen.py (make dashboards).
"""
import json
import os

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "charts", "iocache", "dashboards")
SEL = 'namespace=~"$namespace",pod=~"$pod"'
R = "$__rate_interval"


def target(expr, legend, ref):
    return {"datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": expr,
            "legendFormat": legend, "refId": ref, "range": True}


def panel(pid, title, desc, exprs, unit, x, y, w=12, h=8, kind="timeseries"):
    p = {
        "id": pid, "type": kind, "title": title, "description": desc,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
                    "tooltip": {"mode": "multi"}},
        "targets": [target(e, l, chr(ord("A") + i)) for i, (e, l) in enumerate(exprs)],
    }
    if kind == "stat":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "value"}
    return p


def variables(extra):
    v = [{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"}]
    for name, query in extra:
        v.append({"name": name, "label": name, "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
                  "query": {"query": query, "refId": name}, "definition": query, "refresh": 2,
                  "includeAll": True, "multi": True, "current": {"text": "All", "value": "$__all"}, "allValue": ".*"})
    return {"list": v}


def dashboard(uid, title, desc, panels, vars_):
    return {
        "uid": uid, "title": title, "description": desc, "tags": ["iocache"], "editable": True,
        "schemaVersion": 39, "version": 1, "time": {"from": "now-1h", "to": "now"}, "refresh": "30s",
        "templating": variables(vars_), "panels": panels, "annotations": {"list": []},
    }


instance_panels = [
    panel(1, "Throughput", "Commands per second executed by each instance, and the throughput its last validation benchmark measured.",
          [(f'sum by (namespace, pod) (rate(redis_commands_processed_total{{{SEL}}}[{R}]))', "{{namespace}}/{{pod}} live"),
           ('max by (namespace, instance) (iocache_benchmark_ops_per_second{namespace=~"$namespace"})', "{{namespace}}/{{instance}} validated")],
          "ops", 0, 0),
    panel(2, "Commands by type", "The ten busiest commands.",
          [(f'topk(10, sum by (cmd) (rate(redis_commands_total{{{SEL}}}[{R}])))', "{{cmd}}")], "ops", 12, 0),
    panel(3, "Command latency p99", "99th percentile execution time on the main thread, per command (excludes network and queueing).",
          [(f'histogram_quantile(0.99, sum by (le, cmd) (rate(iocache_command_duration_seconds_bucket{{{SEL}}}[{R}])))', "{{cmd}}")],
          "s", 0, 8),
    panel(4, "Hit ratio", "Share of key lookups that found their key.",
          [(f'sum by (pod) (rate(redis_keyspace_hits_total{{{SEL}}}[{R}])) / clamp_min(sum by (pod) (rate(redis_keyspace_hits_total{{{SEL}}}[{R}])) + sum by (pod) (rate(redis_keyspace_misses_total{{{SEL}}}[{R}])), 1e-9)', "{{pod}}")],
          "percentunit", 12, 8),
    panel(5, "Memory", "used_memory (what maxmemory is compared against), RSS and maxmemory.",
          [(f'redis_memory_used_bytes{{{SEL}}}', "{{pod}} used"), (f'redis_memory_used_rss_bytes{{{SEL}}}', "{{pod}} rss"),
           (f'redis_memory_max_bytes{{{SEL}}}', "{{pod}} maxmemory")], "bytes", 0, 16),
    panel(6, "Evictions and expirations", "Keys evicted under maxmemory and keys removed by TTL, per second.",
          [(f'sum by (pod) (rate(redis_evicted_keys_total{{{SEL}}}[{R}]))', "{{pod}} evicted"),
           (f'sum by (pod) (rate(redis_expired_keys_total{{{SEL}}}[{R}]))', "{{pod}} expired")], "ops", 12, 16),
    panel(7, "Socket reads per thread", "Reads per second on each server thread. Thread 0 is the main thread: with I/O threads on it does no socket work.",
          [(f'sum by (pod, thread) (rate(iocache_io_thread_reads_total{{{SEL}}}[{R}]))', "{{pod}} thread {{thread}}")], "ops", 0, 24),
    panel(8, "Socket writes per thread", "Writes per second on each server thread.",
          [(f'sum by (pod, thread) (rate(iocache_io_thread_writes_total{{{SEL}}}[{R}]))', "{{pod}} thread {{thread}}")], "ops", 12, 24),
    panel(9, "CPU per thread", "CPU each server thread uses (1 = one full core); the legend names the CPUs it is pinned to.",
          [(f'sum by (pod, thread) (rate(iocache_io_thread_cpu_seconds_total{{{SEL}}}[{R}])) * on (pod, thread) group_left (cpus) max by (pod, thread, cpus) (iocache_io_thread_pinned_cpus{{{SEL}}})', "{{pod}} thread {{thread}} (cpus {{cpus}})")],
          "percentunit", 0, 32),
    panel(10, "Main thread busy", "Share of a CPU the main thread used over the last second. Near 100% the instance is at its limit whatever the I/O threads do.",
          [(f'iocache_main_thread_busy_ratio{{{SEL}}}', "{{pod}}")], "percentunit", 12, 32),
    panel(11, "Mean batch size", "Commands per hand-off from an I/O thread to the main thread: larger batches cost less per command.",
          [(f'sum by (pod, thread) (rate(iocache_io_thread_batched_commands_total{{{SEL}}}[{R}])) / clamp_min(sum by (pod, thread) (rate(iocache_io_thread_batches_total{{{SEL}}}[{R}])), 1e-9)', "{{pod}} thread {{thread}}")],
          "short", 0, 40),
    panel(12, "Clients", "Connected and blocked clients.",
          [(f'redis_connected_clients{{{SEL}}}', "{{pod}} connected"), (f'redis_blocked_clients{{{SEL}}}', "{{pod}} blocked")], "short", 12, 40),
]

operator_panels = [
    panel(1, "Instances by condition", "CacheInstances whose condition has each status.",
          [('count by (condition, status) (iocache_instance_condition == 1)', "{{condition}}={{status}}")], "short", 0, 0),
    panel(2, "Reconciles", "Reconciles per second by controller and result.",
          [(f'sum by (controller, result) (rate(controller_runtime_reconcile_total{{controller=~"cacheinstance|cachebenchmark"}}[{R}]))', "{{controller}} {{result}}")],
          "ops", 12, 0),
    panel(3, "Reconcile errors", "Reconciles that returned an error, per second.",
          [(f'sum by (controller) (rate(controller_runtime_reconcile_errors_total{{controller=~"cacheinstance|cachebenchmark"}}[{R}]))', "{{controller}}")],
          "ops", 0, 8),
    panel(4, "Reconcile duration p99", "99th percentile time per reconcile.",
          [(f'histogram_quantile(0.99, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket{{controller=~"cacheinstance|cachebenchmark"}}[{R}])))', "{{controller}}")],
          "s", 12, 8),
    panel(5, "Benchmark throughput", "Ops/s measured by each benchmark run, by instance and io-threads setting.",
          [('iocache_benchmark_ops_per_second{namespace=~"$namespace"}', "{{namespace}}/{{instance}} io-threads {{io_threads}}")], "ops", 0, 16),
    panel(6, "Benchmark p99 latency", "p99 request latency measured by each benchmark run.",
          [('iocache_benchmark_latency_seconds{namespace=~"$namespace",quantile="0.99"}', "{{namespace}}/{{instance}} io-threads {{io_threads}}")], "s", 12, 16),
    panel(7, "Benchmark runs", "Benchmark runs in the last hour by result.",
          [('sum by (namespace, instance, result) (increase(iocache_benchmark_runs_total{namespace=~"$namespace"}[1h]))', "{{namespace}}/{{instance}} {{result}}")],
          "short", 0, 24),
    panel(8, "Work queue depth", "Objects waiting to be reconciled.",
          [('workqueue_depth{name=~"cacheinstance|cachebenchmark"}', "{{name}}")], "short", 12, 24),
    panel(9, "TLS certificate validity left", "Time until the certificate each TLS instance serves expires (spec.tls). The operator sets CertificateExpiring below 7 days or a quarter of the lifetime; the servers take a renewed certificate without a restart.",
          [('min by (namespace, instance) (iocache_instance_tls_certificate_expiry_timestamp_seconds{namespace=~"$namespace"}) - time()', "{{namespace}}/{{instance}}")],
          "s", 0, 32),
]

dashboards = {
    "iocache-instance.json": dashboard("iocache-instance", "iocache / Instance",
                                       "One or more iocache-server instances: throughput, latency, memory, and how the work spreads over the I/O threads.",
                                       instance_panels, [("namespace", "label_values(redis_up, namespace)"),
                                                         ("pod", 'label_values(redis_up{namespace=~"$namespace"}, pod)')]),
    "iocache-operator.json": dashboard("iocache-operator", "iocache / Operator",
                                       "The iocache operator: instances, reconciles and benchmark results over time.",
                                       operator_panels, [("namespace", "label_values(iocache_instance_condition, namespace)")]),
}

for name, d in dashboards.items():
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(d, f, indent=2, sort_keys=True)
        f.write("\n")
    print("wrote", name)
