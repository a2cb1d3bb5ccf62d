"""Tests of shardscan's remediate stage."""
