"""The YAML loader for configuration files: safe (no object construction), C-accelerated when available."""

from __future__ import annotations

import yaml

# libyaml's safe loader builds the same plain data as ``yaml.SafeLoader``, several times faster;
# the rule files load on every run (a hook runs on every commit).
SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
