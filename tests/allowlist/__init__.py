"""Tests of shardscan's allowlist stage."""
