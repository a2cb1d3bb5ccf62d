"""Tests of shardscan's reader stage."""
