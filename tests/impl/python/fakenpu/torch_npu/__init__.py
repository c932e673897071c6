# tests/impl/python: a stand-in torch_npu (put this directory on PYTHONPATH): registers a
# torch.npu that says an NPU is available, so mode npu runs where the worker would run
# it on an Ascend host (only pypto impls, which get host tensors, can run in it here).
import types

import torch

torch.npu = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,
                                  get_device_name=lambda i=0: f"fake Ascend {i}")
