"""Tests of shardscan's decoders stage."""
