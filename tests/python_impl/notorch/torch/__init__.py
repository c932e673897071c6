# tests/python_impl: put this directory first on PYTHONPATH to make `import torch` fail,
# so the worker's numpy fallback is tested on a host that has torch.
raise ImportError("torch hidden by tests/python_impl/notorch")
