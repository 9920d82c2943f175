"""Inspection: ``__array_namespace_info__``."""

import tensorflow as tf

from crossgrad.backends.tensorflow.namespace._dtypes import _DEFAULTS, _DTYPES, isdtype


# Inspection.

class _Info:
  """What ``__array_namespace_info__()`` returns."""

  def capabilities(self):
    # Data-dependent shapes (unique_*, nonzero) work eagerly and in graphs, not under XLA.
    return {"boolean indexing": False, "data-dependent shapes": True, "max dimensions": 8}

  def default_device(self):
    devices = self.devices()
    gpus = [d for d in devices if "/device:GPU:" in d]
    return (gpus or devices)[0]

  def devices(self):
    return ["/job:localhost/replica:0/task:0" + d.name
            for d in tf.config.list_logical_devices() if d.device_type in ("CPU", "GPU")]

  def default_dtypes(self, *, device=None):
    del device
    return dict(_DEFAULTS)

  def dtypes(self, *, device=None, kind=None):
    del device
    return {d.name: d for d in _DTYPES if kind is None or isdtype(d, kind)}


def __array_namespace_info__():
  return _Info()
