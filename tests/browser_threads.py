"""One Chromium driven by several threads at once (the workshop's attendees,
`browser_workshop.py`), each thread reading like Playwright's sync API, so the page helpers of
`browser_tools` serve it unchanged.

Playwright's sync API belongs to the thread that started it and blocks that thread's driver
for every call: attendees sharing it would walk in turn, and a driver and a Chromium per
attendee cost about 4 CPU-s each (measured on the workshop test). Here one thread runs the
async API (one driver, one Chromium) on its event loop; every call an attendee's thread
makes through `Blocking` runs on that loop and the thread waits for its answer, so the
attendees' waits overlap on the loop as their sessions do on the server.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Blocking:
    """An object of Playwright's async API (a browser, context, page, locator, download, an
    expected event) as its sync API shows it to the calling thread: a call or attribute is
    evaluated on ``loop`` and awaited there; what it gives back is the value, or another
    `Blocking` when it is a Playwright object. ``with`` enters an expected event (as
    ``page.expect_download()``)."""

    def __init__(self, target, loop: asyncio.AbstractEventLoop) -> None:
        self._target, self._loop = target, loop

    def __getattr__(self, name: str):
        value = getattr(self._target, name) if not _is_property(self._target, name) \
            else _on_loop(self._loop, lambda: getattr(self._target, name))
        if isinstance(value, Blocking) or not callable(value):
            return value
        return lambda *args, **kwargs: _on_loop(self._loop, lambda: value(*args, **kwargs))

    def __enter__(self):
        return _on_loop(self._loop, self._target.__aenter__)

    def __exit__(self, *exc):
        return _on_loop(self._loop, lambda: self._target.__aexit__(*exc))


def _on_loop(loop: asyncio.AbstractEventLoop, make):
    """``make()`` evaluated on ``loop`` and, when awaitable, awaited there; its value (a
    `Blocking` for a Playwright object), for the calling thread."""
    async def answer():
        value = make()
        return await value if inspect.isawaitable(value) else value

    value = asyncio.run_coroutine_threadsafe(answer(), loop).result()
    return Blocking(value, loop) if _is_playwright(value) else value


def _is_playwright(value) -> bool:
    return type(value).__module__.startswith("playwright.")


def _is_property(target, name: str) -> bool:
    return isinstance(getattr(type(target), name, None), property)


@contextmanager
def one_chromium(executable: str, args: list[str]) -> Iterator[Blocking]:
    """A headless Chromium (``executable`` with ``args``) on an event loop of its own
    thread, as a `Blocking` browser any thread may use; closed on exit."""
    from playwright.async_api import async_playwright

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="playwright-loop", daemon=True)
    thread.start()
    try:
        playwright = _on_loop(loop, lambda: async_playwright().start())
        try:
            browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                                 args=args)
            try:
                yield browser
            finally:
                browser.close()
        finally:
            playwright.stop()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()
