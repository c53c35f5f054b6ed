"""A persistent cache of compiled XLA executables, in a directory that processes share.

A program compiled once is serialized by XLA (``executable.serialize()``) and written under
a key that says everything the compiled code depends on: the StableHLO text, the compile
options, the platform and its version, the device kind, the number of devices, the XLA
flags of the process, and the versions of jaxlib and xform. A later process with the same
key deserializes it (``client.deserialize_executable``) instead of compiling.

An entry is ``MAGIC``, the SHA-256 of the payload, then the zlib-compressed executable, and
is written to a temporary file then renamed, so a reader sees a whole entry or none. A
truncated, corrupt or foreign entry fails its check (or XLA's deserialization) and is
deleted and recompiled. A read touches the entry's mtime, and when the directory grows past
``max_bytes`` the least recently used entries go. A directory that cannot be written warns
once; compiling goes on as before.

It is on by default, in ``$XDG_CACHE_HOME/xform`` (``~/.cache/xform``); the
``jax_compilation_cache_dir`` flag (or ``JAX_COMPILATION_CACHE_DIR``) moves it,
``jax_enable_compilation_cache`` (``JAX_ENABLE_COMPILATION_CACHE=0``) turns it off, and
``jax_log_compiles`` logs its hits and misses. Every program is cached except trivially small
ones: an eager single-primitive program on a CPU is kept only when it took 10 ms or more to
compile (most such primitives run on the host path anyway, and an elementwise op compiles in
about as long as a read takes). A program with Python host callbacks is never cached: the
callbacks are objects of this process.
"""

import hashlib
import logging
import os
import sys
import tempfile
import threading
import time
import warnings
import zlib

import jaxlib.version
from jaxlib import _jax

from xform import config

MAGIC = b"xform-xla-executable-v1\n"
_log = logging.getLogger("xform.compile_cache")
_DIGEST = 32  # bytes of SHA-256


def _default_directory():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "xform")


class _State:
    enabled = config.read("jax_enable_compilation_cache")
    chosen = config.read("jax_compilation_cache_dir")  # None: the default directory
    directory = (chosen or _default_directory()) if enabled else None
    max_bytes = 2 << 30  # 2 GiB
    min_compile_secs = config.read("jax_persistent_cache_min_compile_time_secs")
    unwritable_warned = False
    known_bytes = None  # the directory's size as this process last counted it, plus writes
    lock = threading.Lock()
    hits = misses = 0

    @classmethod
    def configure(cls, enabled=None, chosen=False):
        if enabled is not None:
            cls.enabled = enabled
        if chosen is not False:
            cls.chosen = chosen
        cls.directory = (cls.chosen or _default_directory()) if cls.enabled else None
        cls.unwritable_warned = False
        cls.known_bytes = None


config.on_update("jax_enable_compilation_cache", lambda on: _State.configure(enabled=on))
config.on_update("jax_compilation_cache_dir", lambda path: _State.configure(chosen=path))
config.on_update(
    "jax_persistent_cache_min_compile_time_secs",
    lambda secs: setattr(_State, "min_compile_secs", secs),
)


def set_directory(path):
    """Cache compiled programs in ``path`` (created when first written); None turns the cache
    off (``jax_compilation_cache_dir`` and ``jax_enable_compilation_cache`` in one call)."""
    if path is not None:
        config.update("jax_compilation_cache_dir", os.fspath(path))
    config.update("jax_enable_compilation_cache", path is not None)


def directory():
    """The cache directory in use, or None when the cache is off."""
    return _State.directory


def set_max_bytes(n):
    """Keep the directory under ``n`` bytes, dropping the least recently used entries."""
    _State.max_bytes = int(n)


def stats():
    """``(hits, misses)`` of this process."""
    return _State.hits, _State.misses


def cache_key(text, options, devices):
    """The hex key of a module compiled with ``options`` for ``devices``."""
    device = devices[0]
    h = hashlib.sha256()
    for part in (
        MAGIC,
        text.encode() if isinstance(text, str) else text,
        options.SerializeAsString(),
        device.platform,
        device.client.platform_version,
        device.device_kind,
        str(len(devices)),
        os.environ.get("XLA_FLAGS", ""),
        jaxlib.version.__version__,
        _xform_version(),
    ):
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def _xform_version():
    xform = sys.modules.get("xform")
    return getattr(xform, "__version__", "")


def compile_and_load(
    client, text, devices, options, *, cacheable=True, min_compile_secs=0.0, key_text=None
):
    """``client.compile_and_load(text, devices, options)``, through the cache when it is on
    and ``cacheable``; a fresh compile is written only if it took ``min_compile_secs``.

    ``devices`` is a tuple of devices (the ``DeviceList`` is built here). ``key_text``: the
    module's text without its locations, when ``text`` has them (a call ``key_text()``): as
    JAX's, the key leaves out where in the user's code the program came from."""
    device_list = _jax.DeviceList(tuple(devices))
    folder = _State.directory
    if folder is None or not cacheable:
        return client.compile_and_load(text, device_list, options)
    key = cache_key(text if key_text is None else key_text(), options, devices)
    path = os.path.join(folder, key)
    loaded = _load(client, path, device_list, options)
    if loaded is not None:
        _State.hits += 1
        if config.values.log_compiles:
            _log.warning("Persistent compilation cache hit for %s", _module_name(text))
        return loaded
    _State.misses += 1
    start = time.perf_counter()
    loaded = client.compile_and_load(text, device_list, options)
    elapsed = time.perf_counter() - start
    stored = elapsed >= max(min_compile_secs, _State.min_compile_secs)
    if stored:
        _store(folder, path, loaded)
    if config.values.log_compiles:
        _log.warning(
            "Persistent compilation cache miss for %s: compiled in %.3f s%s",
            _module_name(text),
            elapsed,
            ", written" if stored else "",
        )
    return loaded


def _module_name(text):
    head = text[:200]
    start = head.find("module @")
    return head[start + 8 :].split(" ", 1)[0] if start >= 0 else "a module"


def _load(client, path, device_list, options):
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return None
    payload = blob[len(MAGIC) + _DIGEST :]
    if (
        not blob.startswith(MAGIC)
        or hashlib.sha256(payload).digest() != blob[len(MAGIC) : len(MAGIC) + _DIGEST]
    ):
        _drop(path)  # truncated, corrupt or not ours
        return None
    try:
        loaded = client.deserialize_executable(zlib.decompress(payload), device_list, options)
    except Exception:  # noqa: BLE001  (XLA refuses it: another build's, or damaged inside)
        _drop(path)
        return None
    try:
        os.utime(path)  # recently used
    except OSError:
        pass
    return loaded


def _drop(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _store(folder, path, loaded):
    try:
        payload = zlib.compress(loaded.serialize(), 1)
    except Exception:  # noqa: BLE001  (an executable XLA cannot serialize: just not cached)
        return
    blob = MAGIC + hashlib.sha256(payload).digest() + payload
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)  # atomic: readers see the whole entry or none
        except BaseException:
            _drop(tmp)
            raise
    except OSError as e:
        if not _State.unwritable_warned:
            _State.unwritable_warned = True
            warnings.warn(
                f"xform's compilation cache directory {folder!r} cannot be written "
                f"({e}); compiling without the cache. Set another with "
                "xform.config.update('jax_compilation_cache_dir', path).",
                RuntimeWarning,
                stacklevel=4,
            )
        return
    with _State.lock:
        if _State.known_bytes is None:
            _State.known_bytes = _directory_bytes(folder)
        else:
            _State.known_bytes += len(blob)
        if _State.known_bytes > _State.max_bytes:
            _State.known_bytes = _evict(folder, _State.max_bytes)


def _entries(folder):
    out = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.is_file() and not e.name.startswith("."):
                    st = e.stat()
                    out.append((st.st_mtime, st.st_size, e.path))
    except OSError:
        pass
    return out


def _directory_bytes(folder):
    return sum(size for _, size, _ in _entries(folder))


def _evict(folder, max_bytes):
    """Delete the least recently used entries until the directory holds at most 3/4 of
    ``max_bytes`` (a margin, so that the next writes do not evict again at once)."""
    entries = sorted(_entries(folder))
    total = sum(size for _, size, _ in entries)
    for _, size, path in entries:
        if total <= max_bytes * 3 // 4:
            break
        _drop(path)
        total -= size
    return total
