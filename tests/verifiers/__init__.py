"""Tests of shardscan's verifiers stage."""
