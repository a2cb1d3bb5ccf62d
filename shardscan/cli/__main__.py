"""``python -m shardscan.cli``: the console entry point."""

from shardscan.cli import main

main()
