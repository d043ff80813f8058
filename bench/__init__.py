"""Benchmarks for codap-relay: latency, throughput, idle streams, stores, cold start and a cost model.

Run ``python -m bench --help`` from the repository root. Every run measures a trivial endpoint on the same
server as a baseline, and prints each figure with its ratio to that baseline.
"""
