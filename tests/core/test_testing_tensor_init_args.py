"""cutlass.testing.add_tensor_init_args / validate_tensor_init_args: the examples' --init_normal,
--normal_mean and --normal_std options."""
import argparse

import pytest

from cutlass import testing


def _parser():
    p = argparse.ArgumentParser()
    testing.add_tensor_init_args(p, supports_int_dtypes=True)
    return p


def test_defaults_are_uniform_init_with_a_standard_normal_on_request():
    args = _parser().parse_args([])
    assert (args.init_normal, args.normal_mean, args.normal_std) == (False, 0.0, 1.0)
    args = _parser().parse_args(["--init_normal", "--normal_mean", "0.5", "--normal_std", "2"])
    assert (args.init_normal, args.normal_mean, args.normal_std) == (True, 0.5, 2.0)
    testing.validate_tensor_init_args(args, _parser())


def test_a_non_positive_std_is_rejected():
    p = _parser()
    args = p.parse_args(["--init_normal", "--normal_std", "0"])
    with pytest.raises(SystemExit):
        testing.validate_tensor_init_args(args, p)
