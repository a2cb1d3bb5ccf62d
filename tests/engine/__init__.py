"""Tests of shardscan's engine stage."""
