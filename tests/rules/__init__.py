"""Tests of shardscan's rules stage."""
