"""Tests of the benchmark scripts (``benchmarks/``): their quick runs."""
