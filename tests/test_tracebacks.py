"""Tracebacks as JAX's: an error escaping a user's call into xform shows the user's frames and
none of xform's (xform/ and lowering/ files), as ``jax_traceback_filtering`` says."""

import os
import traceback

import jax
import numpy as np
import pytest
from jax._src import api_util as jax_api_util  # the oracle's own function

import xform
import xform.numpy as xnp
from xform import traceback_util

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTERNAL = tuple(os.path.join(ROOT, d) + os.sep for d in ("xform", "lowering"))
MODES = ["off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto"]


def user_fails(x):
    raise ValueError("the user's own error")


_jitted = xform.jit(user_fails)


# (id, call): each raises user_fails's error from under an xform entry point.
ENTRY_POINTS = [
    ("jit", lambda: _jitted(np.float32(1.0))),
    ("grad", lambda: xform.grad(user_fails)(1.0)),
    ("vmap", lambda: xform.vmap(user_fails)(np.ones(2, np.float32))),
    ("jit_of_grad", lambda: xform.jit(xform.grad(user_fails))(1.0)),
    ("jvp", lambda: xform.jvp(user_fails, (1.0,), (1.0,))),
    ("jacrev", lambda: xform.jacrev(user_fails)(1.0)),
    ("make_jaxpr", lambda: xform.make_jaxpr(user_fails)(1.0)),
    ("cond", lambda: xform.lax.cond(True, user_fails, user_fails, 1.0)),
    ("scan", lambda: xform.lax.scan(lambda c, x: (user_fails(c), x), 0.0, np.ones(2))),
    ("checkpoint", lambda: xform.checkpoint(user_fails)(1.0)),
]


def _frames(e):
    return [(f.filename, f.name) for f in traceback.extract_tb(e.__traceback__)]


def _raise(call):
    with pytest.raises(ValueError, match="the user's own error") as info:
        call()
    return info.value


@pytest.fixture(params=MODES)
def mode(request):
    with xform.config.scope("jax_traceback_filtering", request.param):
        yield request.param


@pytest.mark.parametrize("call", [c[1] for c in ENTRY_POINTS], ids=[c[0] for c in ENTRY_POINTS])
def test_an_error_under_an_entry_point_shows_the_users_frames(call, mode):
    e = _raise(call)
    frames = _frames(e)
    assert frames[-1] == (__file__, "user_fails")  # where it was raised
    assert (__file__, "_raise") in frames  # the user's caller
    internal = [f for f in frames if f[0].startswith(INTERNAL)]
    if mode in ("off", "tracebackhide"):
        assert internal  # kept: "off" shows them, pytest hides the marked ones
    else:
        assert internal == []
    if mode == "remove_frames":
        unfiltered = e.__cause__
        assert type(unfiltered) is traceback_util.UnfilteredStackTrace
        assert "excludes xform-internal frames" in str(unfiltered)
        assert str(e) in str(unfiltered)
        assert [f for f in _frames(unfiltered) if f[0].startswith(INTERNAL)]  # the whole of it
    else:
        assert e.__cause__ is None
    notes = getattr(e, "__notes__", [])
    quiet = mode in ("quiet_remove_frames", "auto")  # auto: quiet outside IPython
    assert any("removed its internal frames" in n for n in notes) == quiet


def test_tracebackhide_marks_xforms_frames_only(mode):
    if mode != "tracebackhide":
        pytest.skip("one mode")
    e = _raise(ENTRY_POINTS[0][1])
    tb = e.__traceback__
    while tb is not None:
        hidden = tb.tb_frame.f_locals.get("__tracebackhide__", False)
        assert hidden == tb.tb_frame.f_code.co_filename.startswith(INTERNAL), tb.tb_frame
        tb = tb.tb_next


def test_an_eager_operations_error_drops_the_frames_below_it():
    with pytest.raises(TypeError) as info:
        xform.lax.add(xnp.ones(3), xnp.ones(2))
    frames = _frames(info.value)
    assert frames[0] == (__file__, "test_an_eager_operations_error_drops_the_frames_below_it")
    assert len(frames) == 2  # the test and lax.add, the public function it called
    assert frames[1][0].startswith(INTERNAL)


def test_the_same_frames_as_jax_for_an_error_in_a_jitted_function():
    def names(lib):
        with pytest.raises(ValueError) as info:
            lib.jit(user_fails)(1.0)
        return [name for _, name in _frames(info.value)]

    assert names(xform) == names(jax)


def test_the_mode_is_checked_as_jax_checks_it():
    with pytest.raises(ValueError, match="jax_traceback_filtering"):
        xform.config.update("jax_traceback_filtering", "sometimes")


def test_fun_sourceinfo_names_a_function_as_jax_does():
    line = user_fails.__code__.co_firstlineno
    assert traceback_util.fun_sourceinfo(user_fails) == f"user_fails at {__file__}:{line}"
    assert traceback_util.fun_sourceinfo(_jitted) == f"user_fails at {__file__}:{line}"
    for other in (np.sin, len, print, xnp.sin):
        assert traceback_util.fun_sourceinfo(other) == jax_api_util.fun_sourceinfo(other)
