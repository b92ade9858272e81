"""A session's call whose client elicits, resumable by `Last-Event-ID` across its questions (2025-06-18,
2025-11-25): each run of the call is a request of one recorded run (`resumption.py`), numbered on from the last, and
the questions are the run's own last events, so that a client that comes back gets them, and what follows them,
from any replica.

```
run ends on interrupts     its log numbers `elicitation/create` per question in place of the result (on its feed and
                           record), and holds the result for the endpoint only (unnumbered, after them)
  the endpoint (this)      writes the questions (the client's answers kept under their ids, which the stream polls
                           for), then another run of the route: the call again with the answers, STREAM continues
                           (`RunQueries.continues`: the same run, its events so far and its numbering carried on)
  the client left          the runs go on (`Answered.outlives`): its answers may come from a stream it resumed
no answer in time          the held result ends the call (the question, and how to answer it by a later call)
```
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.capabilities import Write

from .elicitation import Elicitation, answer_key, form_for, log, resume_of
from .encode import message_event
from .resumption import OLD_FORMS, STREAM
from .url_elicitation import asked_by_url, url_answer
from .wire import messages_in


class StreamedElicitation(Elicitation):
    """What comes after each run of a resumable call (`Answered.then`): the questions its run asked, answered, and
    the answers another run of the same call."""

    __slots__ = ()

    async def __call__(self, last: bytes, write: Write) -> bytes | None:
        if last.lstrip().startswith(b"{"):  # one JSON body: an error before the run's head
            await write(b"event: message\ndata: " + last.strip() + b"\n\n" if self._continued else last)
            return None
        numbered = [event + b"\n\n" for event in last.split(b"\n\n") if event.startswith(b"id: ")]
        held = [event for event in messages_in(last, "text/event-stream") if event.get("id") == self._call.get("id")
                and "method" not in event]
        asked = [m for m in messages_in(b"".join(numbered), "text/event-stream")
                 if m.get("method") == "elicitation/create"]
        result = held[0].get("result") if held else None
        structured = result.get("structuredContent") if isinstance(result, dict) else None
        interrupts = structured.get("interrupts") if isinstance(structured, dict) else None
        if not asked or not isinstance(result, dict) or not isinstance(structured, dict) \
                or not isinstance(interrupts, list) or len(interrupts) < len(asked):
            await write(last)  # the call's result, or what the endpoint cannot read: it ends the call
            return None
        keys = [answer_key(self._session, str(question["id"])) for question in asked]
        by_link = [isinstance(q.get("params"), dict) and asked_by_url(q["params"]) for q in asked]
        answers = await self._answers(keys, interrupts, by_link, b"".join(numbered), write)
        if answers is None:  # none in time, or the store failed: the held result ends the call
            await write(message_event(held[0]))
            return None
        content = result.get("content")
        text = content[0].get("text") if isinstance(content, list) and content and isinstance(content[0], dict) \
            else None
        going_on = orjson.loads(self._going_on(answers, structured.get("conversation_id"), result.get("_meta"), text))
        self._continued = True
        stream = going_on[STREAM]
        return orjson.dumps({**going_on, STREAM: {**stream, "continues": True, "runs": (stream.get("runs") or 1) + 1}})


    async def _answers(self, keys: list[str], interrupts: list[Any], by_link: list[bool], questions: bytes,
                       write: Write) -> list[dict[str, Any]] | None:
        """The client's answers to the questions, as the next run's `_meta` carries them; None when one did not come
        in time."""
        answers = []
        try:
            for key in keys:  # before they are asked: an answer is kept only for a question asked
                await self._asked.keep(key, {})
            await write(questions)
            for key, interrupt, link in zip(keys, interrupts, by_link, strict=False):
                said = await self._answer(key, write)
                if said is None:
                    return None
                if link:
                    result = said.get("result")
                    answers.append(url_answer(interrupt.get("id"), result if isinstance(result, dict) else {}))
                    continue
                _, unwrap = form_for(interrupt, enums_of_2025_11=self._form_mode)
                answers.append(resume_of(interrupt, said, unwrap))
        except Exception:
            log.warning("the answers to a call's questions could not be waited for", exc_info=True)
            return None
        finally:
            for key in keys:
                try:
                    await self._asked.forget(key)
                except Exception:
                    log.warning("a question's answer was not forgotten: the store's TTL will", exc_info=True)
        return answers


def asks(kept: dict[str, Any]) -> str:
    """The version a session's questions are asked in (its forms), for the call's run to ask them."""
    version = kept.get("version")
    return version if isinstance(version, str) else OLD_FORMS
