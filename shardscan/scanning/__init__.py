"""The engine's stages below ``shardscan.engine.Scanner``: shard reading, batch, cell, resolution, verification, caps.

This package's ``__init__`` imports nothing on purpose: a module here is imported without pulling in
the rest of the engine (``shardscan.filescan`` needs the value types, not the Scanner).
"""
