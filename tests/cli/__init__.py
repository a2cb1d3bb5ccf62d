"""Tests of shardscan's cli stage."""
