"""Tests of shardscan's reporters stage."""
