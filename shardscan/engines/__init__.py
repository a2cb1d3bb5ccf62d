"""Engines that run a scan's work items somewhere else than in this process (Ray)."""
