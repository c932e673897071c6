# tests/impl/python: put this directory first on PYTHONPATH to make `import torch` fail,
# so the worker's numpy fallback is tested on a host that has torch.
raise ImportError("torch hidden by tests/impl/python/notorch")
