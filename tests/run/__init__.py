"""Tests of shardscan's run stage."""
