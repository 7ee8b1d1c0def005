"""A secure source of uniform random integers: a ChaCha20 keystream keyed from the OS.

Contract: `secure_words()` returns this thread's `ChaChaWords`, keyed from ``os.urandom``;
a forked child re-keys before its first draw (the process id is checked on every draw and
`os.register_at_fork` drops the parent's generators), so no two threads or processes share
a keystream and none can be seeded. ``bits(n, width)`` gives ``n`` independent integers
uniform on [0, 2^width), each the low ``width`` bits of one keystream word (32-bit words
when ``width <= 32``, else 64-bit): every bit of a ChaCha20 keystream is uniform and
independent of the others for anyone without the key (RFC 8439).

The samplers take any object with this ``bits`` method; tests pass a scripted one to
enumerate the algorithm's paths. `NoiseSource(secure=True)` never takes one.
"""

from __future__ import annotations

import os
import threading

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

#: keystream bytes made per call to the cipher (a few MB: large calls amortise, small
#: ones keep the buffer in cache)
CHUNK_BYTES = 4 << 20


class ChaChaWords:
    """ChaCha20 (256-bit key and 128-bit counter+nonce from ``os.urandom``) over zeros."""

    def __init__(self):
        self._rekey()

    def _key(self) -> tuple[bytes, bytes]:
        """A fresh 256-bit key and 128-bit initial counter and nonce."""
        return os.urandom(32), os.urandom(16)

    def _rekey(self) -> None:
        cipher = Cipher(algorithms.ChaCha20(*self._key()), mode=None)
        self._encryptor = cipher.encryptor()
        self._zeros = bytes(CHUNK_BYTES)
        self._pid = os.getpid()
        self._buffer = np.empty(0, dtype=np.uint8)
        self._pos = 0

    def random_bytes(self, nbytes: int) -> np.ndarray:
        """``nbytes`` keystream bytes (uint8), never handed out twice."""
        if self._pid != os.getpid():  # a forked child: never repeat the parent's stream
            self._rekey()
        out = np.empty(nbytes, dtype=np.uint8)
        done = min(nbytes, self._buffer.size - self._pos)
        out[:done] = self._buffer[self._pos:self._pos + done]
        self._pos += done
        while nbytes - done >= CHUNK_BYTES:  # whole chunks straight into the output
            self._encryptor.update_into(self._zeros, memoryview(out[done:done + CHUNK_BYTES]))
            done += CHUNK_BYTES
        if done < nbytes:
            self._buffer = np.empty(CHUNK_BYTES, dtype=np.uint8)
            self._encryptor.update_into(self._zeros, memoryview(self._buffer))
            self._pos = nbytes - done
            out[done:] = self._buffer[:self._pos]
        return out

    def bits(self, n: int, width: int) -> np.ndarray:
        """``n`` integers uniform on [0, 2^width), 0 <= width <= 64 (uint32 or uint64)."""
        dtype = np.uint32 if width <= 32 else np.uint64
        words = self.random_bytes(n * np.dtype(dtype).itemsize).view(dtype)
        if width < 8 * words.itemsize:
            words &= dtype((1 << width) - 1)
        return words


_local = threading.local()


def _forget_after_fork() -> None:
    """In a forked child, drop the generators copied from the parent (checked again by
    process id on every draw, for forks this hook does not see)."""
    global _local
    _local = threading.local()


os.register_at_fork(after_in_child=_forget_after_fork)


def secure_words() -> ChaChaWords:
    """This thread's (and process's) keystream, keyed on first use."""
    words = getattr(_local, "words", None)
    if words is None:
        words = _local.words = ChaChaWords()
    return words
