"""The inspector: a page the gateway serves (off by default, behind a key of its own) that shows every run's
translation, live: the requests on both sides, each upstream frame beside the canonical events it made and the
client's frames, what was dropped or approximated and why, and how long each took.

```
RouteHandler ──begin/end──▶ ring.RunRing (the last N runs, M bytes; runs captured only while watched)
                                 │
      app.InspectorApp ──api, live SSE──▶ the page (page/: HTML, CSS, JS shipped in the package)
                                 │
                  views (what a person may see of a run: bodies only where the route allows)
```
"""
