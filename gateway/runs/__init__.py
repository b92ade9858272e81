"""Runs that outlive their client: their replies kept for resuming, and where each run is."""
