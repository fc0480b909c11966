"""model.config: the strict environment readers every part of Folio uses."""

from __future__ import annotations

import pytest

from model.config import (
    ConfigError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_int_list,
    env_json_object,
    env_list,
    env_required,
    env_str,
)


def test_values_and_defaults():
    environ = {"A": "7", "B": "yes", "C": "a, b,,c", "D": "5,300", "E": '{"x": 1}', "F": "0.5"}
    assert env_int("A", 1, environ=environ) == 7
    assert env_int("MISSING", 1, environ=environ) == 1
    assert env_bool("B", environ=environ) is True
    assert env_list("C", [], environ=environ) == ["a", "b", "c"]
    assert env_int_list("D", [1], environ=environ) == [5, 300]
    assert env_json_object("E", environ=environ) == {"x": 1}
    assert env_float("F", 1.0, environ=environ) == 0.5
    assert env_choice("G", "drop", ("keep", "drop"), environ=environ) == "drop"


def test_a_secret_comes_from_its_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    assert env_str("KEY", environ={"KEY": "plain", "KEY_FILE": str(secret)}) == "s3cret"


@pytest.mark.parametrize(
    ("read", "message"),
    [
        (lambda: env_int("N", 1, environ={"N": "ten"}), "N='ten' is not an integer"),
        (lambda: env_int("N", 1, minimum=2, environ={"N": "1"}), "N=1 is below the minimum of 2"),
        (lambda: env_bool("B", environ={"B": "maybe"}), "B='maybe' is not a boolean"),
        (lambda: env_int_list("L", [], environ={"L": "1,x"}), "L: 'x' is not an integer"),
        (lambda: env_json_object("J", environ={"J": "[1]"}), "J must be a JSON object"),
        (lambda: env_choice("C", "a", ("a", "b"), environ={"C": "z"}), "C='z' is not one of"),
        (lambda: env_required("R", what="nothing to do", environ={}), "R is not set: nothing"),
        (lambda: env_str("S", environ={"S_FILE": "/nonexistent"}), "S_FILE='/nonexistent'"),
    ],
)
def test_a_malformed_value_is_refused_naming_the_variable(read, message):
    with pytest.raises(ConfigError, match=message):
        read()
