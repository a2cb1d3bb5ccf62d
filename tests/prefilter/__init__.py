"""Tests of shardscan's prefilter stage."""
