"""Recordings: what one exchange through the gateway was, on both sides, kept so that it can be seen, replayed as
an agent, judged and translated again without the agent.

```
client request ─▶ gateway ─▶ upstream request
client frames ◀── gateway ◀── upstream head and frames, each with its time
        └──────────── capture.py (one run, bounded) ──────────┘
                            │
          files.py (to disk, bounded) · exchange.py (the format) · replay.py (served as an agent)
          offline.py (check and translate a recording) · judged.py (a live run judged, both sides)
```
"""
