"""Driver options, Python side: their text, what a factory accepts, checks, conversion, loading.

Out of process and over ``exec:`` they are in ``test_driver_options_wire.py``.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pytest

from tests.ipc.conftest import ROOT
from vts.ipc.driver_options import (
    MAX_OPTION_TEXT,
    DriverOption,
    DriverOptionError,
    accepted_options,
    check_options,
    options_of,
    parse_driver_option,
)
from vts.ipc.drivers import DriverNotFound, DriverRef

OPTIONED = "tests.fakes.optioned:create_device"


@pytest.mark.parametrize(("text", "pair"), [
    ("name=blue", ("name", "blue")),
    ("a.b-c=x=y", ("a.b-c", "x=y")),  # the first '=' splits
    ("_x=", ("_x", "")),  # an empty value is a value
    ("precision=highest", ("precision", "highest")),
])
def test_good_option_text_parses(text, pair):
    assert parse_driver_option(text) == pair


@pytest.mark.parametrize(("text", "says"), [
    ("name", "expected KEY=VALUE"),
    ("=blue", "empty"),
    ("1name=x", "is not a name"),
    ("na me=x", "is not a name"),
    ("name=a\nb", "control character"),
    ("na\x7fme=x", "control character"),
    ("name=" + "x" * MAX_OPTION_TEXT, "longer than"),
])
def test_bad_option_text_is_a_driver_option_error(text, says):
    with pytest.raises(DriverOptionError, match=says) as raised:
        parse_driver_option(text)
    assert isinstance(raised.value, DriverNotFound)  # the CLI maps it to exit status 2


def test_a_reference_keeps_its_options_sorted_and_stays_a_value():
    ref = DriverRef(OPTIONED, (("revision", "2"), ("name", "blue")))
    assert ref.options == (("name", "blue"), ("revision", "2"))
    assert str(ref) == OPTIONED
    assert ref.options_dict == {"name": "blue", "revision": "2"}
    assert ref == DriverRef(OPTIONED, (("name", "blue"), ("revision", "2")))
    assert hash(ref) == hash(DriverRef(OPTIONED, (("name", "blue"), ("revision", "2"))))
    assert ref != DriverRef(OPTIONED)
    copy = pickle.loads(pickle.dumps(ref))
    assert copy == ref and copy.options == ref.options and copy.kind == "module"
    assert ref.with_options({"loud": "1"}).options == (("loud", "1"),)
    assert DriverRef.of(ref) is ref and DriverRef.of(OPTIONED) == DriverRef(OPTIONED)


def test_a_key_given_twice_or_malformed_is_refused():
    with pytest.raises(DriverOptionError, match="given twice"):
        DriverRef(OPTIONED, (("name", "a"), ("name", "b")))
    with pytest.raises(DriverOptionError, match="not a name"):
        DriverRef("reference").with_options([("9", "x")])
    with pytest.raises(DriverOptionError, match="pair"):
        DriverRef("reference", ("name=x",))  # type: ignore[arg-type]


def test_accepted_options_come_from_the_factory_signature():
    accepted = accepted_options(DriverRef(OPTIONED))
    assert accepted is not None
    assert [(o.name, o.default) for o in accepted] == [
        ("loud", "false"), ("name", "optioned"), ("revision", "1"), ("scale", "1.0")]  # argv is not an option
    assert dict((o.name, o.description) for o in accepted)["name"] == "the device's name after ``nnvts-``"
    assert accepted_options(DriverRef("tests.fakes.optioned:any_options")) is None  # **options: any
    assert accepted_options(DriverRef("tests.fakes.optioned:needs_name")) == (
        DriverOption("name", None, ""),)  # required: no default
    assert accepted_options(DriverRef("template")) == ()  # no fake options on the template driver
    assert options_of(DriverRef("reference").load()) == ()  # a Device instance takes none
    assert options_of(type(DriverRef("reference").load())) == ()  # nor a Device class


def test_the_xla_driver_documents_backend_and_precision():
    accepted = accepted_options(DriverRef("xla"))  # read from the signature: jax is not imported
    assert accepted is not None
    by_name = {o.name: o for o in accepted}
    assert set(by_name) == {"backend", "precision"}
    assert "NNVTS_XLA_BACKEND" in by_name["backend"].description
    assert "NNVTS_XLA_PRECISION" in by_name["precision"].description


def test_check_options_names_the_unknown_option_and_lists_the_accepted_ones():
    with pytest.raises(DriverOptionError) as raised:
        check_options(DriverRef("xla", (("bakend", "cpu"),)))
    assert str(raised.value) == ("driver 'xla' does not accept option 'bakend' "
                                 "(accepted: backend=<none>, precision=<none>)")
    with pytest.raises(DriverOptionError, match=r"^driver 'template' does not accept option 'x' "
                                                r"\(it accepts no options\)$"):
        check_options(DriverRef("template", (("x", "1"),)))
    with pytest.raises(DriverOptionError, match="needs option name"):
        DriverRef("tests.fakes.optioned:needs_name").load()
    with pytest.raises(DriverOptionError, match=r"revision='x': expected an integer"):
        check_options(DriverRef(OPTIONED, (("revision", "x"),)))  # converted before anything runs
    check_options(DriverRef(OPTIONED, (("name", "blue"),)))
    check_options(DriverRef("tests.fakes.optioned:any_options", (("whatever", "1"),)))
    check_options(DriverRef("exec:/nonexistent", (("any", "1"),)))  # a program checks its own, when it starts


@pytest.mark.parametrize(("options", "name", "version"), [
    ((), "nnvts-optioned", "optioned 1 x1.0"),
    ((("name", "blue"), ("revision", "7"), ("loud", "yes"), ("scale", "2.5")), "nnvts-blue", "optioned 7 x2.5!"),
    ((("loud", "0"),), "nnvts-optioned", "optioned 1 x1.0"),
    ((("loud", "TRUE"),), "nnvts-optioned", "optioned 1 x1.0!"),
])
def test_load_calls_the_factory_with_converted_options(options, name, version):
    device = DriverRef(OPTIONED, options).load()
    assert (device.name, device.get_version_string()) == (name, version)


@pytest.mark.parametrize(("option", "says"), [
    (("loud", "maybe"), "expected a boolean"),
    (("revision", "1.5"), "expected an integer"),
    (("scale", "big"), "expected a number"),
])
def test_a_value_that_does_not_convert_is_a_driver_option_error(option, says):
    with pytest.raises(DriverOptionError, match=says):
        DriverRef(OPTIONED, (option,)).load()


def test_options_reach_a_factory_taking_any():
    device = DriverRef("tests.fakes.optioned:any_options", (("b", "2"), ("a", "1"))).load()
    assert device.get_version_string() == "a=1 b=2"


def test_an_entry_point_driver_gets_its_options(tmp_path):
    """An installed driver (entry point of ``nnvts.drivers``) is found, checked and loaded with options."""
    info = tmp_path / "optioned_driver-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: optioned-driver\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[nnvts.drivers]\noptioned = {OPTIONED}\n")
    code = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(tmp_path)!r}, {ROOT!r}]
        from vts.ipc.driver_options import DriverOptionError, accepted_options, check_options
        from vts.ipc.drivers import DriverRef, available_drivers
        assert available_drivers()["optioned"] == {OPTIONED!r}
        ref = DriverRef("optioned", [("name", "green"), ("revision", "3")])
        check_options(ref)
        device = ref.load()
        print(device.name, device.get_version_string(), [o.name for o in accepted_options(ref)])
        try:
            check_options(ref.with_options([("colour", "red")]))
        except DriverOptionError as error:
            print(error)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "nnvts-green optioned 3 x1.0 ['loud', 'name', 'revision', 'scale']"
    assert lines[1].startswith("driver 'optioned' does not accept option 'colour' (accepted: loud=false, name=")


def test_a_factory_taking_any_option_shows_the_options_its_docstring_documents():
    from vts.ipc.driver_options import documented_options

    def create_device(argv=(), **options):
        """A factory.

        Driver options:
        ep: the execution provider
        ep.KEY: a provider option
        """

    assert options_of(create_device) is None
    assert documented_options(create_device) == {"ep": "the execution provider", "ep.KEY": "a provider option"}
    assert documented_options(object()) == {}
