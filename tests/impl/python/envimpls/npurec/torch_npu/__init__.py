# tests/impl/python/run_env.py: a stand-in torch_npu (put npurec/ on PYTHONPATH) whose
# torch.npu says four NPUs are there and records the device set_device was given, so
# the device scenario can see phasegate's worker call torch.npu.set_device(N) in mode npu.
import types

import torch

_current = [None]


def _set_device(device):
    _current[0] = device


torch.npu = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 4,
                                  set_device=_set_device, current_device=lambda: _current[0])
