"""Conversations across dialects: the history mapping, the run recorder and the stores that keep them."""
