"""Hidden checks for mig_packing: bad input raises the documented error and changes nothing."""

from __future__ import annotations

import collections
import enum
import types
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from mig_packing import Gpu, Instance, plan
from mig_packing_helpers import check_plan

pytestmark = pytest.mark.category("bad_input")


def test_an_unknown_model_raises_value_error() -> None:
    """An unknown GPU model raises ValueError naming it, in Gpu and in plan."""
    with pytest.raises(ValueError, match="A100-120GB"):
        Gpu("A100-120GB")
    with pytest.raises(ValueError, match="H200"):
        plan({}, 1, "H200")
    for product in ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "a100-80gb"):
        with pytest.raises(ValueError):
            Gpu(product)
        with pytest.raises(ValueError):
            plan({}, 1, product)


@pytest.mark.points(2)
def test_another_models_profile_is_rejected() -> None:
    """A profile name of another model (1g.5gb on an A100-80GB) raises ValueError."""
    gpu = Gpu("A100-80GB")
    with pytest.raises(ValueError, match=r"1g\.5gb"):
        gpu.place("1g.5gb")
    with pytest.raises(ValueError, match=r"3g\.20gb"):
        plan({"3g.20gb": 1}, 1, "H100-80GB")
    with pytest.raises(ValueError, match=r"7g\.80gb"):
        Gpu("A100-40GB").place("7g.80gb")
    assert gpu.instances() == [], f"a rejected place left {gpu.instances()!r} behind"


def test_an_unknown_profile_raises_value_error() -> None:
    """An unknown profile name (a media-extension "+me" name included) raises ValueError
    naming it."""
    with pytest.raises(ValueError, match=r"9g\.90gb"):
        Gpu("H100-80GB").place("9g.90gb")
    with pytest.raises(ValueError, match=r"9g\.90gb"):
        plan({"9g.90gb": 1}, 1, "H100-80GB")
    for name in ("1g.10gb+me", "1g.20gb+me", " 1g.10gb"):
        with pytest.raises(ValueError):
            Gpu("H100-80GB").place(name)
        with pytest.raises(ValueError):
            plan({name: 1}, 1, "H100-80GB")


@pytest.mark.points(2)
def test_a_start_off_the_table_raises_and_changes_nothing() -> None:
    """place(profile, start) with a start not in the profile's starts raises ValueError."""
    gpu = Gpu("A100-80GB")
    for name, start in [("4g.40gb", 2), ("1g.10gb", 7), ("2g.20gb", 6), ("3g.40gb", 2),
                        ("1g.10gb", -1), ("7g.80gb", 8)]:
        with pytest.raises(ValueError, match=str(start)):
            gpu.place(name, start)
    assert gpu.instances() == [], f"a rejected start left {gpu.instances()!r} behind"


@pytest.mark.points(2)
def test_a_double_release_raises() -> None:
    """Releasing an instance twice raises ValueError the second time and changes nothing."""
    gpu = Gpu("A100-80GB")
    first = gpu.place("1g.10gb")
    assert first is not None
    gpu.release(first)
    second = gpu.place("1g.10gb")
    with pytest.raises(ValueError):
        gpu.release(first) if second != first else gpu.release(Instance("1g.10gb", 0, 1))
    assert gpu.instances() == [second], (
        f"a rejected release changed instances() to {gpu.instances()!r}")
    assert second is not None
    gpu.release(second)
    with pytest.raises(ValueError):
        gpu.release(second)


def test_an_instance_with_another_end_is_not_released() -> None:
    """An instance with the held profile and start but another end is not the held one: its
    release raises ValueError and frees nothing."""
    gpu = Gpu("A100-80GB")
    one = gpu.place("1g.10gb", 6)
    for other in [Instance("1g.10gb", 6, 8), Instance("1g.10gb", 6, 6)]:
        try:
            gpu.release(other)
        except ValueError:
            pass
        else:
            pytest.fail(f"release({other!r}) on a GPU holding {one!r} returned: expected "
                        "ValueError, the end differs so the GPU does not hold it")
    assert gpu.instances() == [one], f"instances() after the refused releases: {gpu.instances()!r}"


@pytest.mark.points(2)
def test_a_foreign_instance_is_not_released() -> None:
    """Releasing an instance this GPU does not hold (another profile on the same slices, or
    one never placed here) raises ValueError and frees nothing."""
    gpu = Gpu("A100-80GB")
    three = gpu.place("3g.40gb", 0)
    for foreign in [Instance("4g.40gb", 0, 4), Instance("1g.10gb", 0, 1),
                    Instance("3g.40gb", 4, 8)]:
        with pytest.raises(ValueError):
            gpu.release(foreign)
    assert gpu.instances() == [three], f"instances() after foreign releases: {gpu.instances()!r}"
    assert "4g.40gb" not in gpu.placeable(), "a foreign release freed the 3g's slices"


@pytest.mark.points(2)
def test_a_negative_count_raises() -> None:
    """A negative count, or a negative number of GPUs, raises ValueError naming it."""
    with pytest.raises(ValueError, match="-1"):
        plan({"1g.10gb": 2, "2g.20gb": -1}, 1, "A100-80GB")
    with pytest.raises(ValueError, match="-2"):
        plan({"1g.10gb": 1}, -2, "A100-80GB")


@pytest.mark.parametrize("count", [1.0, "2", None, True])
def test_a_count_that_is_not_an_int_raises_type_error(count: Any) -> None:
    """A count that is not an int (a float, a str, None, a bool) raises TypeError."""
    with pytest.raises(TypeError):
        plan({"1g.10gb": count}, 1, "A100-80GB")


def test_gpus_that_is_not_an_int_raises_type_error() -> None:
    """gpus that is not an int (a float, 2.0 included, a bool) raises TypeError, whether or
    not the requests would fit."""
    gpus: Any
    for requests, gpus in [({"1g.10gb": 1}, 1.5), ({"1g.10gb": 1}, True), ({"1g.10gb": 1}, 2.0),
                           ({"7g.80gb": 3}, 2.0), ({}, 2.0), ({"7g.80gb": 2}, True)]:
        try:
            got = plan(requests, gpus, "A100-80GB")
        except TypeError:
            continue
        pytest.fail(f"plan({requests}, {gpus!r}, 'A100-80GB') returned {got!r}: expected "
                    "TypeError, gpus must be an int whatever the requests")


def test_a_start_that_is_not_an_int_raises_type_error() -> None:
    """place(profile, start) with a start that is not an int raises TypeError, even one equal
    to a start of the table (1.0), and places nothing."""
    gpu = Gpu("A100-80GB")
    for start in [1.0, "4"]:
        with pytest.raises(TypeError):
            gpu.place("1g.10gb", start)  # type: ignore[arg-type]
    assert gpu.instances() == [], f"a rejected start left {gpu.instances()!r} behind"


class _Slice(enum.IntEnum):
    ZERO = 0
    ONE = 1
    TWO = 2
    FOUR = 4


@pytest.mark.points(1)
def test_a_start_that_is_an_int_subclass_is_a_start() -> None:
    """place(profile, start) takes an int subclass (an IntEnum member) as the int it is: it
    places there, and a member off the table raises ValueError."""
    gpu = Gpu("A100-80GB")
    for name, start in [("3g.40gb", _Slice.FOUR), ("2g.20gb", _Slice.TWO), ("1g.10gb", _Slice.ONE)]:
        try:
            got = gpu.place(name, start)
        except TypeError as err:
            pytest.fail(f"place({name!r}, {start!r}) raised {err!r}: an IntEnum member is an int "
                        f"({start!r} == {int(start)}), so it is a start")
        want = Instance(name, int(start), int(start) + {"3g.40gb": 4, "2g.20gb": 2}.get(name, 1))
        assert got == want, f"place({name!r}, {start!r}) returned {got!r}, expected {want!r}"
    assert gpu.place("1g.10gb", _Slice.ZERO) == Instance("1g.10gb", 0, 1), (
        f"place('1g.10gb', {_Slice.ZERO!r}) did not place at slice 0: {gpu.instances()!r}")
    with pytest.raises(ValueError):
        Gpu("A100-80GB").place("4g.40gb", _Slice.TWO)


@pytest.mark.points(1)
def test_a_count_that_is_an_int_subclass_is_a_count() -> None:
    """plan takes a count (and gpus) that is an int subclass (an IntEnum member) as the int it
    is."""
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"3g.40gb": _Slice.TWO}, 1), ({"2g.20gb": _Slice.FOUR, "3g.40gb": _Slice.TWO}, 2),
        ({"7g.80gb": _Slice.ONE, "1g.10gb": _Slice.ZERO}, _Slice.TWO)]
    for requests, gpus in cases:
        plain = {name: int(count) for name, count in requests.items()}
        try:
            got = plan(requests, gpus, "A100-80GB")
        except TypeError as err:
            pytest.fail(f"plan({requests}, {gpus!r}, 'A100-80GB') raised {err!r}: an IntEnum "
                        "member is an int, so it is a count")
        assert got is not None, f"plan({requests}, {gpus!r}, 'A100-80GB') returned None; it fits"
        check_plan(got, plain, int(gpus), "A100-80GB")
    assert plan({"3g.40gb": _Slice.FOUR}, _Slice.ONE, "A100-80GB") is None, (
        "plan({'3g.40gb': 4}, 1) given as IntEnum members did not return None; four 3g do not "
        "fit one GPU")


def test_a_start_of_true_raises_type_error() -> None:
    """place(profile, True) raises TypeError, as for counts: a bool is not a start (not slice 1),
    and nothing is placed."""
    gpu = Gpu("A100-80GB")
    for start in (True, False):
        with pytest.raises(TypeError):
            gpu.place("1g.10gb", start)
    assert gpu.instances() == [], f"a start of True or False left {gpu.instances()!r} behind"


def test_a_model_or_profile_that_is_not_a_str_raises() -> None:
    """A model or a profile name that is not a str (a number, None, bytes) raises TypeError or
    ValueError (either is accepted), in Gpu, place and plan, and changes nothing."""
    bad: Any
    for bad in (80, None, ("A100-80GB",), b"A100-80GB"):
        with pytest.raises((TypeError, ValueError)):
            Gpu(bad)
        with pytest.raises((TypeError, ValueError)):
            plan({}, 1, bad)
    gpu = Gpu("A100-80GB")
    for bad in (19, None, b"1g.10gb"):
        with pytest.raises((TypeError, ValueError)):
            gpu.place(bad)
        with pytest.raises((TypeError, ValueError)):
            plan({bad: 1}, 1, "A100-80GB")
    assert gpu.instances() == [], f"a refused place left {gpu.instances()!r} behind"


def test_a_zero_count_under_another_models_name_raises() -> None:
    """Every requested name is checked, whatever its count: a zero count under a name that is
    not the model's (1g.5gb on an A100-80GB, 9g.90gb) raises ValueError naming it, with zero
    GPUs too."""
    for name in ("1g.5gb", "9g.90gb"):
        for gpus in (1, 0):
            with pytest.raises(ValueError, match=name.replace(".", r"\.")):
                plan({"1g.10gb": 1, name: 0}, gpus, "A100-80GB")
            with pytest.raises(ValueError, match=name.replace(".", r"\.")):
                plan({name: 0}, gpus, "A100-80GB")


def test_releasing_what_is_not_an_instance_raises() -> None:
    """release of something that is not an Instance (a tuple of its fields, a str, None) raises
    TypeError or ValueError (either is accepted) and frees nothing."""
    gpu = Gpu("A100-80GB")
    held = gpu.place("3g.40gb", 0)
    bad: Any
    for bad in (("3g.40gb", 0, 4), "3g.40gb", None):
        with pytest.raises((TypeError, ValueError)):
            gpu.release(bad)
    assert gpu.instances() == [held], f"instances() after refused releases: {gpu.instances()!r}"


@pytest.mark.points(1)
def test_every_request_is_checked_even_when_they_cannot_fit() -> None:
    """Every entry of requests is checked, even after earlier entries already ask for more than
    the fleet holds: a bad name, a negative count or a count that is not an int still raises."""
    cases: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"1g.5gb": 1}, ValueError), ({"3g.40gb": -1}, ValueError),
        ({"1g.10gb": 1.5}, TypeError), ({"1g.10gb": None}, TypeError)]
    for late, error in cases:
        requests = {"7g.80gb": 2, **late}
        try:
            got = plan(requests, 1, "A100-80GB")
        except error:
            continue
        pytest.fail(f"plan({requests}, 1, 'A100-80GB') returned {got!r}: expected "
                    f"{error.__name__} for {late}, whether or not the rest fits")


@pytest.mark.points(1)
def test_requests_that_are_not_a_mapping_raise_type_error() -> None:
    """requests that is not a mapping (a list of (name, count) pairs, a set of names) raises
    TypeError, even where dict() would accept it."""
    bad: Any
    for bad in ([("3g.40gb", 1)], (("1g.10gb", 2),), {"7g.80gb"}):
        with pytest.raises(TypeError):
            plan(bad, 1, "A100-80GB")


@pytest.mark.points(1)
def test_requests_of_none_or_an_empty_sequence_raise_type_error() -> None:
    """requests of None, an empty list or an empty str is not a mapping: it raises TypeError
    rather than being read as "nothing requested"."""
    bad: Any
    for bad in (None, [], "", ()):
        for gpus in (2, 0):
            try:
                got = plan(bad, gpus, "A100-80GB")
            except TypeError:
                continue
            pytest.fail(f"plan({bad!r}, {gpus}, 'A100-80GB') returned {got!r}: expected "
                        "TypeError, requests must be a mapping (an empty one is {})")


@pytest.mark.points(1)
def test_a_whole_count_of_another_number_type_raises_type_error() -> None:
    """A count or gpus that is a whole number of another type (Decimal(2), Fraction(2)) is not
    an int: it raises TypeError, as 2.0 does."""
    bad: Any
    for bad in (Decimal(2), Fraction(2)):
        for requests, gpus in [({"3g.40gb": bad}, 1), ({"1g.10gb": bad, "7g.80gb": 1}, 2),
                               ({"3g.40gb": 2}, bad)]:
            try:
                got = plan(requests, gpus, "A100-80GB")
            except TypeError:
                continue
            pytest.fail(f"plan({requests}, {gpus!r}, 'A100-80GB') returned {got!r}: expected "
                        f"TypeError, {bad!r} is not an int")


@pytest.mark.points(1)
def test_a_record_with_an_instances_fields_is_not_released() -> None:
    """release of a record that only has an Instance's fields (a namedtuple, a SimpleNamespace)
    raises TypeError or ValueError (either is accepted) and frees nothing: it is not an
    Instance, so it is not equal to the held one."""
    record = collections.namedtuple("record", "profile start end")
    gpu = Gpu("A100-80GB")
    held = gpu.place("3g.40gb", 0)
    bad: Any
    for bad in (record("3g.40gb", 0, 4), types.SimpleNamespace(profile="3g.40gb", start=0, end=4)):
        try:
            gpu.release(bad)
        except (TypeError, ValueError):
            pass
        else:
            pytest.fail(f"release({bad!r}) returned on a GPU holding {held!r}: expected TypeError "
                        "or ValueError, only an Instance equal to the held one releases it")
        assert gpu.instances() == [held], (
            f"instances() after release({bad!r}) is {gpu.instances()!r}, expected [{held!r}]")


class Mine(Instance):
    """A candidate's own subclass of Instance: same fields, another class."""


def test_an_instance_of_an_instance_subclass_is_not_released() -> None:
    """release of an object of an Instance subclass with the held instance's three fields
    raises TypeError or ValueError (either is accepted) and frees nothing: it is not equal to
    the held Instance."""

    gpu = Gpu("A100-80GB")
    held = gpu.place("3g.40gb", 0)
    bad = Mine("3g.40gb", 0, 4)
    try:
        gpu.release(bad)
    except (TypeError, ValueError):
        pass
    else:
        pytest.fail(f"release of an Instance subclass's {bad!r} returned on a GPU holding "
                    f"{held!r}: expected TypeError or ValueError; it is not == the held Instance "
                    "(release compares with ==, not field by field)")
    assert gpu.instances() == [held], (
        f"instances() after releasing an Instance subclass's {bad!r} is {gpu.instances()!r}, "
        f"expected [{held!r}]")


def _profile_unknown(name: str, how: str) -> None:
    gpu = Gpu("A100-80GB")
    try:
        got: object = gpu.place(name)
    except ValueError:
        pass
    else:
        pytest.fail(f"place({name!r}) returned {got!r}: expected ValueError, {how}")
    assert gpu.instances() == [], f"a refused place({name!r}) left {gpu.instances()!r} behind"
    try:
        got = plan({name: 1}, 1, "A100-80GB")
    except ValueError:
        return
    pytest.fail(f"plan({{{name!r}: 1}}, 1, 'A100-80GB') returned {got!r}: expected ValueError, "
                f"{how}")


def test_a_profile_name_in_another_case_is_unknown() -> None:
    """A profile name spelt in another case ("3G.40GB", "7G.80GB") is not in the table:
    ValueError, in place and in plan."""
    for name in ("3G.40GB", "7G.80GB", "1G.10GB"):
        _profile_unknown(name, "profile names are the table's exactly, case included")


def test_a_profile_name_with_nvidia_smis_mig_prefix_is_unknown() -> None:
    """A profile name as `nvidia-smi -L` prints it ("MIG 3g.40gb") is not in the table:
    ValueError, in place and in plan."""
    for name in ("MIG 3g.40gb", "MIG 7g.80gb", "MIG 1g.10gb"):
        _profile_unknown(name, "profile names are the table's exactly, with no \"MIG \" prefix")


def test_a_model_name_with_surrounding_whitespace_is_unknown() -> None:
    """A model name with surrounding whitespace ("A100-80GB\\n", as nvidia-smi prints it, or
    " H100-80GB") is not a model of the table: ValueError, in Gpu and in plan."""
    for name in ("A100-80GB\n", " H100-80GB", "A100-40GB "):
        try:
            got: object = Gpu(name)
        except ValueError:
            pass
        else:
            pytest.fail(f"Gpu({name!r}) returned a GPU of model {getattr(got, 'model', '?')!r}: "
                        "expected ValueError, the model must be a name of the table exactly")
        try:
            got = plan({"1g.10gb": 1}, 1, name)
        except ValueError:
            continue
        pytest.fail(f"plan({{'1g.10gb': 1}}, 1, {name!r}) returned {got!r}: expected ValueError, "
                    "the model must be a name of the table exactly")


def _place_refused(gpu: Gpu, profile: Any, start: Any, errors: tuple[type[Exception], ...],
                   state: str) -> None:
    held = gpu.instances()
    try:
        got = gpu.place(profile) if start is None else gpu.place(profile, start)
    except errors:
        pass
    else:
        call = f"place({profile!r})" if start is None else f"place({profile!r}, {start!r})"
        want = " or ".join(e.__name__ for e in errors)
        pytest.fail(f"{call} on a GPU {state} returned {got!r}: expected {want}; a bad argument "
                    "is an error however full the GPU is")
    assert gpu.instances() == held, f"a refused place changed instances() to {gpu.instances()!r}"


@pytest.mark.points(1)
def test_place_on_a_full_gpu_still_checks_its_arguments() -> None:
    """place on a GPU with no room (a 7g held, or every start of the profile taken) still
    raises for an unknown or another model's profile, a start off the table or one that is not
    an int."""
    full = Gpu("A100-80GB")
    full.place("7g.80gb")
    no_3g = Gpu("A100-80GB")
    no_3g.place("3g.40gb", 0)
    no_3g.place("1g.10gb", 4)
    for gpu, state in [(full, "holding a 7g"), (no_3g, "with no free 3g.40gb start")]:
        _place_refused(gpu, "1g.5gb", None, (ValueError,), state)
        _place_refused(gpu, "9g.90gb", None, (ValueError,), state)
        _place_refused(gpu, "3g.40gb", 2, (ValueError,), state)
        _place_refused(gpu, "3g.40gb", True, (TypeError,), state)
        _place_refused(gpu, "3g.40gb", 4.0, (TypeError,), state)
        _place_refused(gpu, None, None, (TypeError, ValueError), state)
