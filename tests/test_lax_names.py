"""xform.lax has every public name of jax.lax, or the name is listed here with the reason."""

import jax.lax as jlax

import xform.lax as xlax

NOT_YET = set()

# Names that cannot mean the same thing in xform, each with the reason.
EXEMPT = {}


def test_the_names_of_jax_lax():
    public = {n for n in dir(jlax) if not n.startswith("_")}
    missing = {n for n in public if not hasattr(xlax, n)}
    assert missing - NOT_YET - set(EXEMPT) == set(), (
        f"xform.lax lost {sorted(missing - NOT_YET - set(EXEMPT))}"
    )
    arrived = NOT_YET - missing
    assert not arrived, f"xform.lax now has {sorted(arrived)}: drop them from NOT_YET"
